"""Softmax cross-entropy with ignore_index, fused, rows split over threads.

Forward makes two passes over each row of logits (max, then sum of exp) and keeps only the
per-row max and log-sum-exp; it does not build the (N, C) shifted logits the reference
caches. Backward writes the gradient in one pass, recomputing exp from the logits (which the
cache references, not copies: don't modify the logits in place between forward and backward).
For the MLM head at vocab 30,522 the logits are the largest array of the step. Both passes
are compiled with fastexp.FMA (exp's polynomial as fused multiply-adds).
"""
import math

import numpy as np
from numba import njit

from npbert.kernels.fastexp import FMA, fast_exp
from npbert.kernels.memory import empty_apart
from npbert.kernels.rowops import index_lanes, lanes_like, row_argmax, row_sum
from npbert.kernels.threads import parallel_for
from npbert.ops.cross_entropy import IGNORE_INDEX, CrossEntropyCache

GRAIN = 16384                                          # elements: below this one thread is faster


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FMA)
def _forward(lo, hi, logits, safe, row_max_out, lse, logp_label):
    # logits: (N, C); safe, row_max_out, lse, logp_label: (N,)
    e = np.empty(logits.shape[1], logits.dtype)        # one row of exp(logits - max)
    top_acc, at = lanes_like(e), index_lanes()
    for i in range(lo, hi):
        x = logits[i]                                  # (C,) a view: x[j] vectorises, logits[i, j] less so
        m, top = row_argmax(x, top_acc, at)
        for j in range(e.size):
            e[j] = fast_exp(x[j] - m)
        e[top] = 0.0                                   # the max's own term is exactly 1: log1p keeps
        row_max_out[i], lse[i] = m, math.log1p(row_sum(e))  # the digits of a sum just above 1
        logp_label[i] = (x[safe[i]] - m) - lse[i]


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FMA)
def _backward(lo, hi, logits, safe, row_max, lse, g, dlogits):
    # g: (N,) dloss / n for counted rows, 0 for ignored ones
    C = logits.shape[1]
    for i in range(lo, hi):
        x, d, m, s, gi = logits[i], dlogits[i], row_max[i], lse[i], g[i]     # row views, hoisted scalars
        for j in range(C):
            d[j] = fast_exp((x[j] - m) - s) * gi
        c = safe[i]                                    # the label's entry (p - 1) g: expm1 in float64,
        d[c] = math.expm1((x[c] - m) - s) * gi         # as p - 1 cancels when p ~ 1


def cross_entropy_forward(logits, labels, ignore_index=IGNORE_INDEX):
    # logits: (N, C), labels: (N,) integer
    logits = np.ascontiguousarray(logits)
    counted = labels != ignore_index                                 # (N,)
    n = max(int(counted.sum()), 1)
    safe = np.where(counted, labels, 0).astype(np.int64)             # (N,) ignored rows read class 0
    N = len(labels)
    row_max, lse, logp_label = (np.empty(N, logits.dtype) for _ in range(3))  # (N,) each
    parallel_for(_forward, N, logits, safe, row_max, lse, logp_label, grain=max(1, GRAIN // logits.shape[1]))
    loss = -(logp_label * counted).sum() / n
    return logits.dtype.type(loss), CrossEntropyCache(logits, row_max, lse, safe, counted, n)


def cross_entropy_backward(dloss, cache: CrossEntropyCache):
    logits, safe, row_max, lse, counted, n = (cache.logits, cache.labels, cache.row_max, cache.logsumexp,
                                              cache.counted, cache.n)
    g = (counted * (dloss / n)).astype(logits.dtype)                 # (N,)
    dlogits = empty_apart(logits.shape, logits.dtype, logits)        # (N, C)
    parallel_for(_backward, len(g), logits, safe, row_max, lse, g, dlogits, grain=max(1, GRAIN // logits.shape[1]))
    return dlogits
