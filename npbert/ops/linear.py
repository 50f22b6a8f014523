"""Linear layer, y = x W^T + b, with W in Hugging Face's (out, in) layout.

Backward (docs/layers/linear.md): dx = dy W,  dW = dy^T x,  db = sum of dy over rows.
"""
import numpy as np


def linear_forward(x, w, b):
    # x: (..., in), w: (out, in), b: (out,) or None
    y = x @ w.T                                        # (..., out)
    if b is not None:
        y += b
    return y, (x, w, b is not None)


def linear_backward(dy, cache):
    # dy: (..., out)
    x, w, has_bias = cache
    dx = dy @ w                                        # (..., in)
    x2 = x.reshape(-1, x.shape[-1])                    # (N, in)
    dy2 = dy.reshape(-1, dy.shape[-1])                 # (N, out)
    dw = dy2.T @ x2                                    # (out, in)
    db = dy2.sum(axis=0) if has_bias else None         # (out,)
    return dx, dw, db
