"""Softmax over the last axis, shifted by the row maximum so exp never overflows.

Backward: dx = y * (dy - sum(dy * y)) row by row (docs/layers/softmax.md).
"""
from typing import NamedTuple

import numpy as np


class SoftmaxCache(NamedTuple):
    y: np.ndarray            # (..., N) the probabilities: all that backward needs


def softmax_forward(x):
    # x: (..., N) -> y: (..., N)
    z = x - x.max(axis=-1, keepdims=True)              # (..., N) largest entry is 0
    e = np.exp(z)
    y = e / e.sum(axis=-1, keepdims=True)
    return y, SoftmaxCache(y)


def softmax_backward(dy, cache: SoftmaxCache):
    y = cache.y
    return y * (dy - (dy * y).sum(axis=-1, keepdims=True))
