"""BertForMultipleChoice: which of C endings continues a context, e.g. SWAG
(docs/layers/multiple_choice.md).

    input_ids (B, C, T): each (context, ending) pair a whole sequence, run as B*C sequences
    scores = classifier(dropout(pooled))           pooled: (B, C, F) -> scores (B*C, 1) -> logits (B, C)
    loss   = CE over the C choices
"""
from __future__ import annotations

from typing import NamedTuple

from npbert import backend
from npbert.heads.head import CLS, Head, classifier_dropout, int_labels
from npbert.layers.classifier import W, ClassifierCache, classifier_backward, classifier_forward
from npbert.ops import CrossEntropyCache


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


HEAD = Head(
    name="multiple_choice", architecture="BertForMultipleChoice", weight=W, reads=CLS, choices=True,
    targets=("labels",), num_outputs=lambda num_labels: 1,
    forward=choice_head_forward, backward=choice_head_backward, output_of=lambda out, b, T: out["logits"][b])
