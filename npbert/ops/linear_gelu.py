"""Linear then GELU, y = gelu(x W^T + b): the FFN's widening layer and the MLM transform.

Here it is just linear_forward then gelu_forward (and their backwards in reverse). It is a hot
op of its own because the numba backend fuses the bias add into GELU's pass and the bias
gradient into GELU backward's pass (npbert/kernels/linear_gelu.py), one pass over the
(N, out) intermediate fewer each way.
"""
from npbert.ops.gelu import gelu_backward, gelu_forward
from npbert.ops.linear import linear_backward, linear_forward


def linear_gelu_forward(x, w, b, hidden_act):
    # x: (..., in), w: (out, in), b: (out,)
    h, lin_cache = linear_forward(x, w, b)             # (..., out)
    y, act_cache = gelu_forward(h, hidden_act)         # (..., out)
    return y, (lin_cache, act_cache)


def linear_gelu_backward(dy, cache):
    # dy: (..., out)
    lin_cache, act_cache = cache
    dh = gelu_backward(dy, act_cache)                  # (..., out)
    return linear_backward(dh, lin_cache)              # dx: (..., in), dw: (out, in), db: (out,)
