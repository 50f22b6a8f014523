"""A toy head, written as docs/heads.md says a new head is written: this one file (plus one
entry in HEADS, which tests/finetuning/test_adding_a_head.py makes). It guesses from the [CLS] position whether
a text is "short" or "long", with a linear layer of its own ("toy") and no dropout. Its task's
examples are sentences (npbert/tasks/formats.py's Sentences, reused), which `npbert predict`
reads one per line and prints with their length (its own entry in LINES).

    logits = x W^T + b        x: (B, F) at [CLS] -> logits: (B, 2);  loss = CE(logits, labels)
"""
from __future__ import annotations

from typing import NamedTuple

from npbert import backend
from npbert.commands.predict_lines import SentenceLines
from npbert.heads.head import CLS, Head, int_labels, label_fields
from npbert.ops import CrossEntropyCache, LinearCache
from npbert.tasks.formats import Sentences

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


HEAD = Head(
    name="toy_length", architecture="BertForToyLength", weight=W, reads=CLS, choices=False, targets=("labels",),
    num_outputs=lambda num_labels: 2, forward=toy_head_forward, backward=toy_head_backward,
    output_of=lambda out, b, T: out["logits"][b], config_fields=label_fields)   # its outputs have names: id2label


FORMAT = Sentences()        # formats.py's sentences, an instance of the toy's own: LINES maps it to ToyLines


class ToyLines(SentenceLines):
    """A text per line, whatever its tabs; a prediction printed with the text's length in words."""
    line_fields, line_printed = "a text", r"\S+ \(\d+ words\)"

    def from_line(self, fields, line, n, where):
        return dict(text=line, text_pair=None, where=where)

    def to_line(self, example, output, prediction):
        return f"{prediction} ({len(example['text'].split())} words)"
