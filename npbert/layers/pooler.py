"""The pooler: tanh of a dense layer on each sequence's [CLS] (first) token (docs/layers/pooler.md).
It takes the [CLS] rows, cls (B, H), which the model gathers from the encoder's output."""
from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.ops import LinearCache
from npbert.trace import NO_TRACE

DENSE = "bert.pooler.dense"


class PoolerCache(NamedTuple):
    dense: LinearCache
    pooled: np.ndarray       # (B, H) tanh(dense): tanh' = 1 - pooled^2


def pooler_forward(cls, params, trace=NO_TRACE):
    # cls: (B, H) -> pooled: (B, H); trace: scope "bert.pooler"
    z, dense_cache = backend.linear_forward(cls, params[DENSE + ".weight"], params[DENSE + ".bias"])
    pooled = np.tanh(z)
    trace.record("dense", z)
    trace.record("", pooled)
    return pooled, PoolerCache(dense_cache, pooled)


def pooler_backward(dpooled, cache: PoolerCache, trace=NO_TRACE):
    # dpooled: (B, H) -> dcls: (B, H), grads by HF name
    g = {}
    trace.record_grad("", dpooled)
    dz = dpooled * (1.0 - cache.pooled * cache.pooled)  # tanh' = 1 - tanh^2
    trace.record_grad("dense", dz)
    dcls, g[DENSE + ".weight"], g[DENSE + ".bias"] = backend.linear_backward(dz, cache.dense)
    return dcls, g
