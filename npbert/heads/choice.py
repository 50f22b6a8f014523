"""BertForMultipleChoice: which of C endings continues a context, e.g. SWAG
(docs/layers/multiple_choice.md).

    input_ids (B, C, T): each (context, ending) pair a whole sequence, run as B*C sequences
    scores = classifier(dropout(pooled))           pooled: (B, C, F) -> scores (B*C, 1) -> logits (B, C)
    loss   = CE over the C choices

Examples: {"context", "endings": [...], "label" (the right ending's index)}; accuracy.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert import metrics as m
from npbert.heads.head import CLS, Encoded, Head, classifier_dropout, int_labels, most_common, top_probability
from npbert.layers.classifier import W, ClassifierCache, classifier_backward, classifier_forward
from npbert.ops import CrossEntropyCache
from npbert.tasks.encoding import encode_choices


class ChoiceHeadCache(NamedTuple):
    classifier: ClassifierCache
    loss: CrossEntropyCache | None
    x_shape: tuple               # (B, C, F)


def choice_head_forward(x, params, config, targets, rng, trace):
    """x: (B, C, F), one row per choice -> ({"logits": (B, C), "loss", "labels"}, cache): a score
    per choice (dropout + classifier (1, F)), cross-entropy over the choices."""
    B, C, F = x.shape
    scores, head_cache = classifier_forward(x.reshape(B * C, F), params, classifier_dropout(config), rng,
                                            trace)                                             # (B*C, 1)
    logits = scores.reshape(B, C)                                                              # (B, C)
    trace.record("logits", logits)
    labels, loss, loss_cache = targets.get("labels"), None, None
    if labels is not None:
        labels = int_labels("labels", labels, (B,), C, "number of choices")
        loss, loss_cache = backend.cross_entropy_forward(logits, labels)
        trace.record("loss", loss)
    return dict(logits=logits, loss=loss, labels=labels), ChoiceHeadCache(head_cache, loss_cache, x.shape)


def choice_head_backward(dloss, cache: ChoiceHeadCache, trace):
    # -> dx: (B, C, F), the classifier's grads
    dlogits = backend.cross_entropy_backward(dloss, cache.loss)                       # (B, C)
    trace.record_grad("logits", dlogits)
    dx, grads = classifier_backward(dlogits.reshape(-1, 1), cache.classifier, trace)  # (B*C, F)
    return dx.reshape(cache.x_shape), grads                                           # (B, C, F)


# --- around the model --------------------------------------------------------------------------------

def encode(task, examples, tokenizer, max_seq_length, labels, options=None) -> Encoded:
    return Encoded(encode_choices(examples, tokenizer, max_seq_length))


def decode(task, examples, encoded, outputs, labels, options=None) -> list:
    """logits (C,) per example -> the index of the chosen ending."""
    return [int(np.argmax(o)) for o in outputs]


def gold(task, examples) -> list:
    return [ex["label"] for ex in examples]


def score(task, examples, predictions, labels=None) -> dict:
    return dict(accuracy=m.accuracy(gold(task, examples), predictions))


def baseline(task, train_examples, dev_examples) -> list:
    """The ending most often right in training, for every example."""
    return [most_common(gold(task, train_examples))] * len(dev_examples)


def from_line(fields, line, n, where):
    if len(fields) < 3:
        return None
    return dict(context=fields[0], endings=fields[1:], label=None, where=where)


def format_prediction(task, example, output, prediction) -> str:
    return f"{prediction}\t{top_probability(output):.3f}\t{example['endings'][prediction]}"


HEAD = Head(
    kind="multiple_choice", architecture="BertForMultipleChoice", weight=W, reads=CLS, choices=True,
    targets=("labels",), num_outputs=lambda num_labels: 1,
    forward=choice_head_forward, backward=choice_head_backward, output_of=lambda out, b, T: out["logits"][b],
    encode=encode, decode=decode, gold_key="label", gold=gold, score=score, baseline=baseline,
    label_names=lambda task, train_examples: None, line_fields="context<TAB>ending<TAB>ending ...",
    from_line=from_line, format=format_prediction)
