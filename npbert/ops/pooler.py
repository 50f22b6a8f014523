"""The pooler: tanh of a dense layer on the [CLS] (first) token (docs/layers/pooler.md)."""
import numpy as np

from npbert import backend

DENSE = "bert.pooler.dense"


def pooler_forward(h, params):
    # h: (B, T, H) -> pooled: (B, H)
    z, dense_cache = backend.linear_forward(h[:, 0], params[DENSE + ".weight"], params[DENSE + ".bias"])  # (B, H)
    pooled = np.tanh(z)
    return pooled, (dense_cache, pooled, h.shape)


def pooler_backward(dpooled, cache):
    # dpooled: (B, H) -> dh: (B, T, H), grads by HF name
    dense_cache, pooled, h_shape = cache
    g = {}
    dz = dpooled * (1.0 - pooled * pooled)              # tanh' = 1 - tanh^2
    dcls, g[DENSE + ".weight"], g[DENSE + ".bias"] = backend.linear_backward(dz, dense_cache)  # (B, H)
    dh = np.zeros(h_shape, dtype=dpooled.dtype)         # (B, T, H): only [CLS] receives gradient
    dh[:, 0] = dcls
    return dh, g
