"""The classifier of BertForSequenceClassification, BertForTokenClassification and
BertForMultipleChoice: dropout, then a linear layer named "classifier" (docs/layers/classifier.md).

    logits = dropout(x) W^T + b        W = "classifier.weight" (num_labels, H), b = "classifier.bias"

x is the pooled [CLS] output (B, H) for sequence classification and multiple choice (there
num_labels = 1: one score per choice), the sequence output (B, T, H) for token classification.
"""
from npbert import backend

W = "classifier"


def classifier_forward(x, params, p, rng):
    # x: (..., H) -> logits: (..., num_labels); rng=None: evaluation, no dropout
    x, drop_cache = backend.dropout_forward(x, p, rng)
    logits, lin_cache = backend.linear_forward(x, params[W + ".weight"], params[W + ".bias"])  # (..., K)
    return logits, (drop_cache, lin_cache)


def classifier_backward(dlogits, cache):
    # dlogits: (..., num_labels) -> dx: (..., H), grads by HF name
    drop_cache, lin_cache = cache
    g = {}
    dx, g[W + ".weight"], g[W + ".bias"] = backend.linear_backward(dlogits, lin_cache)  # (..., H)
    return backend.dropout_backward(dx, drop_cache), g
