"""The classifier of BertForSequenceClassification, BertForTokenClassification and
BertForMultipleChoice (npbert/heads/): dropout, then a linear layer named "classifier" (docs/layers/classifier.md).

    logits = dropout(x) W^T + b        W = "classifier.weight" (num_labels, H), b = "classifier.bias"

x is the pooled [CLS] output (B, H) for sequence classification and multiple choice (there
num_labels = 1: one score per choice), the sequence output (B, T, H) for token classification.
"""
from typing import NamedTuple

from npbert import backend
from npbert.ops import DropoutCache, LinearCache
from npbert.trace import NO_TRACE

W = "classifier"


class ClassifierCache(NamedTuple):
    dropout: DropoutCache
    linear: LinearCache


def classifier_forward(x, params, p_drop, rng, trace=NO_TRACE):
    # x: (..., H) -> logits: (..., num_labels); rng=None: evaluation, no dropout; trace: the model's scope
    x, drop = backend.dropout_forward(x, p_drop, rng)
    logits, lin_cache = backend.linear_forward(x, params[W + ".weight"], params[W + ".bias"])  # (..., K)
    trace.record(W, logits)
    return logits, ClassifierCache(drop, lin_cache)


def classifier_backward(dlogits, cache: ClassifierCache, trace=NO_TRACE):
    # dlogits: (..., num_labels) -> dx: (..., H), grads by HF name
    g = {}
    trace.record_grad(W, dlogits)
    dx, g[W + ".weight"], g[W + ".bias"] = backend.linear_backward(dlogits, cache.linear)  # (..., H)
    return backend.dropout_backward(dx, cache.dropout), g
