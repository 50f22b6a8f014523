"""BertForSequenceClassification: one label (or one number) per sequence or pair
(docs/layers/sequence_classification.md).

    logits = classifier(dropout(pooled))           pooled: (B, F) [CLS] -> logits: (B, K)
    loss   = CE(logits, labels), or MSE(logits[:, 0], labels) when K == 1 (regression)

One head for both problems, as Hugging Face's: K == 1 output is a regression (tasks with the
SCORES format, npbert/tasks/formats.py), more are classes (SENTENCES).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.errors import InputError
from npbert.heads.head import CLS, Head, classifier_dropout, int_labels, label_fields
from npbert.layers.classifier import W, ClassifierCache, classifier_backward, classifier_forward
from npbert.ops import CrossEntropyCache, MseCache, mse_backward, mse_forward


class SequenceHeadCache(NamedTuple):
    classifier: ClassifierCache
    loss: CrossEntropyCache | MseCache | None    # MSE when num_labels == 1 (regression); None without labels
    num_labels: int


def sequence_head_forward(x, params, config, targets, rng, trace):
    """x: (B, F) -> ({"logits": (B, K), "loss", "labels"}, cache): dropout + classifier, then
    cross-entropy, or MSE(logits[:, 0], labels) when K == 1 (regression)."""
    logits, head_cache = classifier_forward(x, params, classifier_dropout(config), rng, trace)   # (B, K)
    B, K = logits.shape
    labels, loss, loss_cache = targets.get("labels"), None, None
    if labels is not None:
        if K == 1:
            labels = _float_labels(labels, B)
            loss, loss_cache = mse_forward(logits[:, 0], labels)
        else:
            labels = int_labels("labels", labels, (B,), K, "num_labels")
            loss, loss_cache = backend.cross_entropy_forward(logits, labels)
        trace.record("loss", loss)
    return dict(logits=logits, loss=loss, labels=labels), SequenceHeadCache(head_cache, loss_cache, K)


def sequence_head_backward(dloss, cache: SequenceHeadCache, trace):
    # -> dx: (B, F), the classifier's grads
    if cache.num_labels == 1:
        dlogits = mse_backward(dloss, cache.loss)[:, None]                         # (B, 1)
    else:
        dlogits = backend.cross_entropy_backward(dloss, cache.loss)                # (B, K)
    return classifier_backward(dlogits, cache.classifier, trace)                   # (B, F)


def _float_labels(labels, B):
    labels = np.asarray(labels)
    if labels.shape != (B,) or not (np.issubdtype(labels.dtype, np.number) and np.isfinite(labels).all()):
        raise InputError(f"regression labels must be {B} finite numbers, got shape {labels.shape} dtype {labels.dtype}")
    return labels


def config_fields(names) -> dict:
    problem = "regression" if len(names) == 1 else "single_label_classification"
    return dict(label_fields(names), problem_type=problem)


HEAD = Head(
    name="sequence_classification", architecture="BertForSequenceClassification", weight=W, reads=CLS,
    choices=False, targets=("labels",), num_outputs=lambda num_labels: num_labels,
    forward=sequence_head_forward, backward=sequence_head_backward, output_of=lambda out, b, T: out["logits"][b],
    config_fields=config_fields, regression="sequence_regression")
