"""A toy head, written as docs/heads.md says a new head is written: this one file (plus one
entry in HEADS, which tests/test_toy_head.py makes). It guesses from the [CLS] position whether
a text is "short" or "long", with a linear layer of its own ("toy") and no dropout.

    logits = x W^T + b        x: (B, F) at [CLS] -> logits: (B, 2);  loss = CE(logits, labels)
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.heads.choice import baseline, gold, score   # one label per example, scored by accuracy: reused
from npbert.heads.head import CLS, Encoded, Head, int_labels, label_fields
from npbert.ops import CrossEntropyCache, LinearCache
from npbert.tasks.encoding import encode_sequences

W = "toy"


class ToyHeadCache(NamedTuple):
    linear: LinearCache
    loss: CrossEntropyCache | None


def toy_head_forward(x, params, config, targets, rng, trace):
    """x: (B, F) -> ({"logits": (B, 2), "loss"}, cache)."""
    logits, linear_cache = backend.linear_forward(x, params[W + ".weight"], params[W + ".bias"])   # (B, 2)
    trace.record(W, logits)
    labels, loss, loss_cache = targets.get("labels"), None, None
    if labels is not None:
        labels = int_labels("labels", labels, (logits.shape[0],), 2, "2 labels")
        loss, loss_cache = backend.cross_entropy_forward(logits, labels)
        trace.record("loss", loss)
    return dict(logits=logits, loss=loss, labels=labels), ToyHeadCache(linear_cache, loss_cache)


def toy_head_backward(dloss, cache: ToyHeadCache, trace):
    # -> dx: (B, F), the toy layer's grads
    dlogits = backend.cross_entropy_backward(dloss, cache.loss)                   # (B, 2)
    trace.record_grad(W, dlogits)
    dx, dw, db = backend.linear_backward(dlogits, cache.linear)                   # (B, F)
    return dx, {W + ".weight": dw, W + ".bias": db}


def encode(task, examples, tokenizer, max_seq_length, labels, options=None) -> Encoded:
    return Encoded(encode_sequences(examples, tokenizer, max_seq_length, labels))


def decode(task, examples, encoded, outputs, labels, options=None) -> list:
    return [labels[int(np.argmax(o))] for o in outputs]


HEAD = Head(
    kind="toy_length", architecture="BertForToyLength", weight=W, reads=CLS, choices=False, targets=("labels",),
    num_outputs=lambda num_labels: 2, forward=toy_head_forward, backward=toy_head_backward,
    output_of=lambda out, b, T: out["logits"][b], encode=encode, decode=decode, gold_key="label", gold=gold,
    score=score, baseline=baseline, label_names=lambda task, train_examples: ["short", "long"],
    line_fields="a text", from_line=lambda fields, line, n, where: dict(text=line, text_pair=None, where=where),
    format=lambda task, example, output, prediction: f"{prediction} ({len(example['text'].split())} words)",
    labelled=True, config_fields=label_fields)          # its outputs have names: saved as id2label
