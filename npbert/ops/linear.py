"""Linear layer, y = x W^T + b, with W in Hugging Face's (out, in) layout.

Backward (docs/layers/linear.md): dx = dy W,  dW = dy^T x,  db = sum of dy over rows.
Leading axes are flattened into rows first: NumPy's batched matmul path for a 3-D x is many
times slower than one 2-D BLAS call, and the results are bit-identical. Both backends use this
file (a kernel would make the same BLAS calls: docs/performance.md, "the matmul choice").
"""
from typing import NamedTuple

import numpy as np


class LinearCache(NamedTuple):
    x2: np.ndarray           # (N, in) the input, rows flattened (a view of x: do not modify x before backward)
    w: np.ndarray            # (out, in)
    has_bias: bool           # backward returns db, or None


def linear_forward(x, w, b):
    # x: (..., in), w: (out, in), b: (out,) or None
    x2 = x.reshape(-1, x.shape[-1])                    # (N, in)
    y = x2 @ w.T                                       # (N, out)
    if b is not None:
        y += b
    return y.reshape(*x.shape[:-1], w.shape[0]), LinearCache(x2, w, b is not None)  # (..., out)


def linear_backward(dy, cache: LinearCache):
    # dy: (..., out)
    dy2 = dy.reshape(-1, dy.shape[-1])                 # (N, out)
    dx = (dy2 @ cache.w).reshape(*dy.shape[:-1], cache.w.shape[1])  # (..., in)
    dw = dy2.T @ cache.x2                              # (out, in)
    db = dy2.sum(axis=0) if cache.has_bias else None   # (out,)
    return dx, dw, db
