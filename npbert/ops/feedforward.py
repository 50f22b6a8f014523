"""Position-wise feed-forward block: out = W2 gelu(W1 x + b1) + b2   (docs/layers/feedforward.md).

gelu(W1 x + b1) is one hot op, linear_gelu, so the numba backend can fuse the bias into GELU.

Parameter names are Hugging Face's, relative to one encoder layer:
"intermediate.dense.*" (H -> I) and "output.dense.*" (I -> H).
"""
from npbert import backend

W1, W2 = "intermediate.dense", "output.dense"


def feedforward_forward(x, p, hidden_act):
    # x: (B, T, H)
    a, a_cache = backend.linear_gelu_forward(x, p[W1 + ".weight"], p[W1 + ".bias"], hidden_act)  # (B, T, I)
    out, o_cache = backend.linear_forward(a, p[W2 + ".weight"], p[W2 + ".bias"])                # (B, T, H)
    return out, (a_cache, o_cache)


def feedforward_backward(dout, cache):
    # dout: (B, T, H)
    a_cache, o_cache = cache
    g = {}
    da, g[W2 + ".weight"], g[W2 + ".bias"] = backend.linear_backward(dout, o_cache)   # (B, T, I)
    dx, g[W1 + ".weight"], g[W1 + ".bias"] = backend.linear_gelu_backward(da, a_cache)  # (B, T, H)
    return dx, g
