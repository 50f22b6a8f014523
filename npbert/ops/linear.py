"""Linear layer, y = x W^T + b, with W in Hugging Face's (out, in) layout.

Backward (docs/layers/linear.md): dx = dy W,  dW = dy^T x,  db = sum of dy over rows.
Leading axes are flattened into rows first: NumPy's batched matmul path for a 3-D x is many
times slower than one 2-D BLAS call, and the results are bit-identical.
"""
import numpy as np


def linear_forward(x, w, b):
    # x: (..., in), w: (out, in), b: (out,) or None
    x2 = x.reshape(-1, x.shape[-1])                    # (N, in)
    y = x2 @ w.T                                       # (N, out)
    if b is not None:
        y += b
    return y.reshape(*x.shape[:-1], w.shape[0]), (x2, w, b is not None)  # (..., out)


def linear_backward(dy, cache):
    # dy: (..., out)
    x2, w, has_bias = cache
    dy2 = dy.reshape(-1, dy.shape[-1])                 # (N, out)
    dx = (dy2 @ w).reshape(*dy.shape[:-1], w.shape[1]) # (..., in)
    dw = dy2.T @ x2                                    # (out, in)
    db = dy2.sum(axis=0) if has_bias else None         # (out,)
    return dx, dw, db
