"""Fused LayerNorm over the last axis, one pass per row, rows split over threads.

Forward writes xhat = (x - mean) * rstd beside y and keeps it with each row's 1/std: the same
cache record as the reference (npbert/ops/layernorm.py), and no reference to the caller's x,
which the caller may change before backward. (llm.c keeps x and recomputes xhat instead; here
x is the residual sum, made for this call and alive only through the cache, so keeping xhat
costs the same memory.) Row statistics are summed in float64 for both dtypes, and rstd is
kept in float64: the one field of all the kernels' caches whose dtype is not the reference's
(LayerNormCache says so; either backward takes either cache).
"""
import numpy as np
from numba import njit

from npbert.kernels.memory import empty_apart
from npbert.kernels.rowops import row_dot, row_sum
from npbert.kernels.threads import parallel_for
from npbert.ops.layernorm import LayerNormCache

ROWS_PER_CHUNK = 64    # dgamma/dbeta are summed per fixed chunk of rows, then over chunks, so
                       # the result does not depend on the number of threads


@njit(nogil=True, cache=True, error_model="numpy")
def _forward(lo, hi, x, gamma, beta, eps, y, xhat, rstd):
    # x, y, xhat: (N, H); rstd: (N,) float64
    H = x.shape[1]
    xc = np.empty(H)                                   # x - mean, float64
    for i in range(lo, hi):
        m = row_sum(x[i]) / H
        for j in range(H):
            xc[j] = x[i, j] - m
        r = 1.0 / np.sqrt(row_dot(xc, xc) / H + eps)   # biased variance, as BERT
        rstd[i] = r
        for j in range(H):
            xhat[i, j] = xc[j] * r
            y[i, j] = xc[j] * r * gamma[j] + beta[j]


@njit(nogil=True, cache=True, error_model="numpy")
def _backward(lo, hi, dy, xhat, rstd, gamma, dx, dgamma_parts, dbeta_parts):
    # dy, xhat, dx: (N, H); *_parts: (chunks, H) float64, zeroed
    N, H = xhat.shape
    xh, g = np.empty(H), np.empty(H)                   # float64 rows
    for c in range(lo, hi):
        for i in range(c * ROWS_PER_CHUNK, min(N, (c + 1) * ROWS_PER_CHUNK)):
            for j in range(H):
                xh[j] = xhat[i, j]
                g[j] = dy[i, j] * gamma[j]             # dxhat
                dgamma_parts[c, j] += dy[i, j] * xh[j]
                dbeta_parts[c, j] += dy[i, j]
            m1 = row_sum(g) / H                        # mean(dxhat)
            m2 = row_dot(g, xh) / H                    # mean(dxhat * xhat)
            for j in range(H):
                dx[i, j] = rstd[i] * (g[j] - m1 - xh[j] * m2)


def layernorm_forward(x, gamma, beta, eps):
    # x: (..., H), gamma: (H,), beta: (H,)
    H = x.shape[-1]
    x2 = np.ascontiguousarray(x).reshape(-1, H)        # (N, H)
    y = empty_apart(x2.shape, x2.dtype, x2)            # (N, H)
    xhat = empty_apart(x2.shape, x2.dtype, x2, y)      # (N, H)
    rstd = np.empty((len(x2), 1))                      # (N, 1) float64
    parallel_for(_forward, len(x2), x2, gamma, beta, float(eps), y, xhat, rstd.reshape(-1), grain=64)
    return y.reshape(x.shape), LayerNormCache(xhat.reshape(x.shape), rstd.reshape(*x.shape[:-1], 1), gamma)


def layernorm_backward(dy, cache: LayerNormCache):
    # dy: (..., H)
    H = cache.xhat.shape[-1]
    xhat = np.ascontiguousarray(cache.xhat).reshape(-1, H)  # (N, H)
    N = len(xhat)
    chunks = -(-N // ROWS_PER_CHUNK)
    dy2 = np.ascontiguousarray(dy).reshape(N, H)      # (N, H)
    dx = empty_apart(xhat.shape, xhat.dtype, xhat, dy2)  # (N, H)
    dgamma_parts, dbeta_parts = np.zeros((chunks, H)), np.zeros((chunks, H))  # (chunks, H)
    parallel_for(_backward, chunks, dy2, xhat, cache.rstd.reshape(N), cache.gamma, dx, dgamma_parts, dbeta_parts)
    dtype = xhat.dtype
    return dx.reshape(dy.shape), dgamma_parts.sum(axis=0).astype(dtype), dbeta_parts.sum(axis=0).astype(dtype)
