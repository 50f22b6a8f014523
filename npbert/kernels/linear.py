"""Linear layer, y = x W^T + b: the reference's math (npbert/ops/linear.py) with its matmuls
split over npbert's threads (kernels/matmul.py). Same cache record."""
from npbert.kernels.matmul import matmul
from npbert.ops.linear import LinearCache


def linear_forward(x, w, b):
    # x: (..., in), w: (out, in), b: (out,) or None
    x2 = x.reshape(-1, x.shape[-1])                    # (N, in)
    y = matmul(x2, w.T, b)                             # (N, out), b added row by row after the gemm
    return y.reshape(*x.shape[:-1], w.shape[0]), LinearCache(x2, w, b is not None)  # (..., out)


def linear_backward(dy, cache: LinearCache):
    # dy: (..., out)
    dy2 = dy.reshape(-1, dy.shape[-1])                 # (N, out)
    dx = matmul(dy2, cache.w).reshape(*dy.shape[:-1], cache.w.shape[1])  # (..., in)
    dw = matmul(dy2.T, cache.x2)                       # (out, in)
    db = dy2.sum(axis=0) if cache.has_bias else None   # (out,)
    return dx, dw, db
