"""The pooler: tanh of a dense layer on the [CLS] (first) token (docs/layers/pooler.md)."""
from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.ops import LinearCache
from npbert.trace import NO_TRACE

DENSE = "bert.pooler.dense"


class PoolerCache(NamedTuple):
    dense: LinearCache
    pooled: np.ndarray       # (B, H) tanh(dense): tanh' = 1 - pooled^2
    h_shape: tuple           # (B, T, H) of the sequence output: only [CLS] gets a gradient


def pooler_forward(h, params, trace=NO_TRACE):
    # h: (B, T, H) -> pooled: (B, H); trace: scope "bert.pooler"
    z, dense_cache = backend.linear_forward(h[:, 0], params[DENSE + ".weight"], params[DENSE + ".bias"])  # (B, H)
    pooled = np.tanh(z)
    trace.record("dense", z)
    trace.record("", pooled)
    return pooled, PoolerCache(dense_cache, pooled, h.shape)


def pooler_backward(dpooled, cache: PoolerCache, trace=NO_TRACE):
    # dpooled: (B, H) -> dh: (B, T, H), grads by HF name
    g = {}
    trace.record_grad("", dpooled)
    dz = dpooled * (1.0 - cache.pooled * cache.pooled)  # tanh' = 1 - tanh^2
    trace.record_grad("dense", dz)
    dcls, g[DENSE + ".weight"], g[DENSE + ".bias"] = backend.linear_backward(dz, cache.dense)  # (B, H)
    dh = np.zeros(cache.h_shape, dtype=dpooled.dtype)   # (B, T, H): only [CLS] receives gradient
    dh[:, 0] = dcls
    return dh, g
