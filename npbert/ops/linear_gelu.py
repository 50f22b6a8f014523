"""Linear then GELU, y = gelu(x W^T + b): the FFN's widening layer and the MLM transform.

Here it is just linear_forward then gelu_forward (and their backwards in reverse). It is a hot
op of its own because the numba backend fuses the bias add into GELU's pass and the bias
gradient into GELU backward's pass (npbert/kernels/linear_gelu.py), one pass over the
(N, out) intermediate fewer each way.
"""
from typing import NamedTuple

import numpy as np

from npbert.ops.gelu import GeluCache, gelu_backward, gelu_forward
from npbert.ops.linear import LinearCache, linear_backward, linear_forward


class LinearGeluCache(NamedTuple):
    linear: LinearCache      # the matmul's, with the bias
    pre: np.ndarray          # (..., out) the pre-activation x W^T + b
    hidden_act: str


def linear_gelu_forward(x, w, b, hidden_act):
    # x: (..., in), w: (out, in), b: (out,)
    pre, lin_cache = linear_forward(x, w, b)           # (..., out)
    y, _ = gelu_forward(pre, hidden_act)               # (..., out)
    return y, LinearGeluCache(lin_cache, pre, hidden_act)


def pre_activation_grad(dy, cache: LinearGeluCache):
    """d loss / d pre from d loss / d y: GELU's backward. Part of the backward below; a trace
    calls it on either backend's cache (the Numba kernel fuses it and never keeps it)."""
    return gelu_backward(dy, GeluCache(cache.pre, cache.hidden_act))   # (..., out)


def linear_gelu_backward(dy, cache: LinearGeluCache):
    # dy: (..., out)
    dpre = pre_activation_grad(dy, cache)              # (..., out)
    return linear_backward(dpre, cache.linear)         # dx: (..., in), dw: (out, in), db: (out,)
