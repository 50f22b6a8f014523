"""Fused LayerNorm over the last axis, one pass per row, rows split over threads.

Forward keeps the input x (a reference, not a copy) and each row's mean and 1/std; backward
recomputes xhat = (x - mean) * rstd from them, as llm.c does, instead of storing an (N, H)
xhat: the input array is alive anyway as long as the cache holds it, so this saves one
(N, H) buffer per LayerNorm. Row statistics are summed in float64 for both dtypes.
"""
import numpy as np
from numba import njit

from npbert.kernels.memory import empty_apart
from npbert.kernels.rowops import row_dot, row_sum
from npbert.kernels.threads import parallel_for

ROWS_PER_CHUNK = 64    # dgamma/dbeta are summed per fixed chunk of rows, then over chunks, so
                       # the result does not depend on the number of threads


@njit(nogil=True, cache=True, error_model="numpy")
def _forward(lo, hi, x, gamma, beta, eps, y, mean, rstd):
    # x, y: (N, H); mean, rstd: (N,) float64
    H = x.shape[1]
    xc = np.empty(H)                                   # x - mean, float64
    for i in range(lo, hi):
        m = row_sum(x[i]) / H
        for j in range(H):
            xc[j] = x[i, j] - m
        r = 1.0 / np.sqrt(row_dot(xc, xc) / H + eps)   # biased variance, as BERT
        mean[i], rstd[i] = m, r
        for j in range(H):
            y[i, j] = xc[j] * r * gamma[j] + beta[j]


@njit(nogil=True, cache=True, error_model="numpy")
def _backward(lo, hi, dy, x, mean, rstd, gamma, dx, dgamma_parts, dbeta_parts):
    # dy, x, dx: (N, H); *_parts: (chunks, H) float64, zeroed
    N, H = x.shape
    xhat, g = np.empty(H), np.empty(H)                 # float64 rows
    for c in range(lo, hi):
        for i in range(c * ROWS_PER_CHUNK, min(N, (c + 1) * ROWS_PER_CHUNK)):
            for j in range(H):
                xhat[j] = (x[i, j] - mean[i]) * rstd[i]
                g[j] = dy[i, j] * gamma[j]             # dxhat
                dgamma_parts[c, j] += dy[i, j] * xhat[j]
                dbeta_parts[c, j] += dy[i, j]
            m1 = row_sum(g) / H                        # mean(dxhat)
            m2 = row_dot(g, xhat) / H                  # mean(dxhat * xhat)
            for j in range(H):
                dx[i, j] = rstd[i] * (g[j] - m1 - xhat[j] * m2)


def layernorm_forward(x, gamma, beta, eps):
    # x: (..., H), gamma: (H,), beta: (H,)
    H = x.shape[-1]
    x2 = np.ascontiguousarray(x).reshape(-1, H)        # (N, H)
    y = empty_apart(x2.shape, x2.dtype, x2)            # (N, H)
    mean, rstd = np.empty(len(x2)), np.empty(len(x2))  # (N,) float64
    parallel_for(_forward, len(x2), x2, gamma, beta, float(eps), y, mean, rstd, grain=64)
    return y.reshape(x.shape), (x2, mean, rstd, gamma)


def layernorm_backward(dy, cache):
    # dy: (..., H)
    x2, mean, rstd, gamma = cache
    N, H = x2.shape
    chunks = -(-N // ROWS_PER_CHUNK)
    dy2 = np.ascontiguousarray(dy).reshape(N, H)      # (N, H)
    dx = empty_apart(x2.shape, x2.dtype, x2, dy2)      # (N, H)
    dgamma_parts, dbeta_parts = np.zeros((chunks, H)), np.zeros((chunks, H))  # (chunks, H)
    parallel_for(_backward, chunks, dy2, x2, mean, rstd, gamma,
                 dx, dgamma_parts, dbeta_parts)
    dtype = x2.dtype
    return dx.reshape(dy.shape), dgamma_parts.sum(axis=0).astype(dtype), dbeta_parts.sum(axis=0).astype(dtype)
