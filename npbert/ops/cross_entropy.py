"""Softmax cross-entropy averaged over the rows whose label is not ignore_index
(docs/layers/cross_entropy.md):

    loss = -(1/n) sum_i log softmax(logits_i)[label_i],   n = number of counted rows

Backward: dlogits_i = (softmax(logits_i) - onehot(label_i)) / n for counted rows, 0 otherwise;
the label's entry p - 1 is computed as expm1(z - logsumexp), which keeps its digits when p is
close to 1 (exp(...) - 1 would lose them to cancellation). For the same reason logsumexp is
log1p of the sum without the max's own term (which is exactly 1): when p is close to 1 that
sum is tiny, and log(1 + sum) would round it away.
With no counted rows the loss is 0 and its gradient 0 (Hugging Face/PyTorch return NaN).
"""
from typing import NamedTuple

import numpy as np


IGNORE_INDEX = -100


class CrossEntropyCache(NamedTuple):
    logits: np.ndarray       # (N, C) kept, not copied: do not modify them before backward
    row_max: np.ndarray      # (N,) each row's largest logit
    logsumexp: np.ndarray    # (N,) log sum exp(logits - row_max)
    labels: np.ndarray       # (N,) the labels, ignored rows read as class 0
    counted: np.ndarray      # (N,) bool, rows whose label is not ignore_index
    n: int                   # number of counted rows (at least 1)


def cross_entropy_forward(logits, labels, ignore_index=IGNORE_INDEX):
    # logits: (N, C), labels: (N,) integer
    counted = labels != ignore_index                                 # (N,)
    n = max(int(counted.sum()), 1)
    safe = np.where(counted, labels, 0)                              # (N,) ignored rows read class 0
    rows = np.arange(len(logits))
    row_max = logits.max(axis=-1)                                    # (N,)
    z = logits - row_max[:, None]                                    # (N, C) the max entry is exactly 0
    e = np.exp(z)                                                    # (N, C)
    e[rows, z.argmax(axis=-1)] = 0.0                                 # drop the max's term, exactly 1 ...
    logsumexp = np.log1p(e.sum(axis=-1))                             # (N,) ... so log1p keeps small sums' digits
    cache = CrossEntropyCache(logits, row_max, logsumexp, safe, counted, n)
    loss = -(label_log_probs(cache) * counted).sum() / n
    return logits.dtype.type(loss), cache


def label_log_probs(cache: CrossEntropyCache):
    """(N,) log softmax(logits_i)[label_i] (ignored rows: of class 0), in the logits' dtype."""
    rows = np.arange(len(cache.labels))
    return (cache.logits[rows, cache.labels] - cache.row_max) - cache.logsumexp   # z[label] - logsumexp


def cross_entropy_backward(dloss, cache: CrossEntropyCache):
    rows, safe = np.arange(len(cache.labels)), cache.labels
    z = cache.logits - cache.row_max[:, None]                        # (N, C) as in forward
    dlogits = np.exp(z - cache.logsumexp[:, None])                   # (N, C) softmax
    dlogits[rows, safe] = np.expm1(z[rows, safe] - cache.logsumexp)  # p - 1, exact even when p is near 1
    dlogits *= (cache.counted * (dloss / cache.n))[:, None].astype(z.dtype)   # ignored rows -> 0
    return dlogits
