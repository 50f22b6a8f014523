"""Position-wise feed-forward block: out = W2 gelu(W1 x + b1) + b2   (docs/layers/feedforward.md).

gelu(W1 x + b1) is one hot op, linear_gelu, so the numba backend can fuse the bias into GELU.

Parameter names are Hugging Face's, relative to one encoder layer:
"intermediate.dense.*" (H -> I) and "output.dense.*" (I -> H).
"""
from typing import NamedTuple

from npbert import backend
from npbert.ops import LinearCache, LinearGeluCache, pre_activation_grad
from npbert.trace import NO_TRACE

W1, W2 = "intermediate.dense", "output.dense"


class FeedForwardCache(NamedTuple):
    intermediate: LinearGeluCache   # intermediate.dense + GELU
    output: LinearCache             # output.dense


def feedforward_forward(x, params, hidden_act, trace=NO_TRACE):
    # x: (R, H) rows; trace: scope "bert.encoder.layer.{i}"
    a, a_cache = backend.linear_gelu_forward(x, params[W1 + ".weight"], params[W1 + ".bias"], hidden_act)  # (R, I)
    out, o_cache = backend.linear_forward(a, params[W2 + ".weight"], params[W2 + ".bias"])                # (R, H)
    trace.record_rows(("intermediate.dense", "intermediate", "output.dense"), (a_cache.pre, a, out))  # pre: before GELU
    return out, FeedForwardCache(a_cache, o_cache)


def feedforward_backward(dout, cache: FeedForwardCache, trace=NO_TRACE):
    # dout: (R, H)
    g = {}
    trace.record_grad_rows("output.dense", dout)
    da, g[W2 + ".weight"], g[W2 + ".bias"] = backend.linear_backward(dout, cache.output)        # (R, I)
    trace.record_grad_rows("intermediate", da)
    # made again, the reference's way, only when traced: the fused kernel never keeps it
    trace.record_grad("intermediate.dense", lambda: trace.batched(pre_activation_grad(da, cache.intermediate)))
    dx, g[W1 + ".weight"], g[W1 + ".bias"] = backend.linear_gelu_backward(da, cache.intermediate)  # (R, H)
    return dx, g

