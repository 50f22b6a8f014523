"""Softmax over the last axis, shifted by the row maximum so exp never overflows.

Backward: dx = y * (dy - sum(dy * y)) row by row (docs/layers/softmax.md).
"""
import numpy as np


def softmax_forward(x):
    # x: (..., N) -> y: (..., N)
    z = x - x.max(axis=-1, keepdims=True)              # (..., N) largest entry is 0
    e = np.exp(z)
    y = e / e.sum(axis=-1, keepdims=True)
    return y, y


def softmax_backward(dy, y):
    return y * (dy - (dy * y).sum(axis=-1, keepdims=True))
