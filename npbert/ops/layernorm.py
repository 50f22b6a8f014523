"""LayerNorm over the last axis: y = (x - mean) / sqrt(var + eps) * gamma + beta.

The cache holds the normalised input xhat and 1/std, which is all backward needs
(docs/layers/layernorm.md has the derivation of dx).
"""
from typing import NamedTuple

import numpy as np


class LayerNormCache(NamedTuple):
    xhat: np.ndarray         # (..., H) (x - mean) * rstd
    rstd: np.ndarray         # (..., 1) 1 / sqrt(var + eps): x's dtype here, float64 from the numba kernel
    gamma: np.ndarray        # (H,)


def layernorm_forward(x, gamma, beta, eps):
    # x: (..., H), gamma: (H,), beta: (H,)
    mean = x.mean(axis=-1, keepdims=True)              # (..., 1)
    xc = x - mean                                      # (..., H)
    var = (xc * xc).mean(axis=-1, keepdims=True)       # (..., 1) biased variance, as BERT
    rstd = 1.0 / np.sqrt(var + eps)                    # (..., 1)
    xhat = xc * rstd                                   # (..., H)
    y = xhat * gamma + beta                            # (..., H)
    return y, LayerNormCache(xhat, rstd, gamma)


def layernorm_backward(dy, cache: LayerNormCache):
    # dy: (..., H)
    xhat, rstd, gamma = cache.xhat, cache.rstd, cache.gamma
    H = xhat.shape[-1]
    dgamma = (dy * xhat).reshape(-1, H).sum(axis=0)    # (H,)
    dbeta = dy.reshape(-1, H).sum(axis=0)              # (H,)
    dxhat = dy * gamma                                 # (..., H)
    # dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    return dx.astype(xhat.dtype, copy=False), dgamma, dbeta   # a no-op but for the kernel's float64 rstd
