"""Inverted dropout for the numba backend, dropping exactly the elements the reference drops.

The uniforms are npbert.ops.dropout's counter-based ones, computed in the pass that applies
them: element i keeps iff (splitmix64(key, i) >> 40) >= ceil(p_drop * 2^24), the reference's
u(key, i) >= p_drop in integers (u is a 24-bit integer over 2^24). Nothing is drawn that is
not used: the packed step computes the uniforms of its real rows only, where it used to
draw every padded position's with NumPy's generator (4.6 M float32 a tiny step, 16 ms). The
uint64 multiplies vectorise (AVX-512DQ has a 64-bit multiply; AVX2 builds it of 32-bit ones).
keep_element is shared with the attention kernels; one parallel pass writes y and the 1-byte
keep mask of the DropoutCache both backends return.
"""
import math

import numpy as np
from numba import njit

from npbert.kernels.memory import empty_apart
from npbert.kernels.threads import parallel_for
from npbert.ops.dropout import BITS, GOLDEN, MIX1, MIX2, DropoutCache, dropout_key

GRAIN = 65536                                          # elements: below this one thread is faster
ONE, S30, S27, S31, TOP = (np.uint64(v) for v in (1, 30, 27, 31, 64 - BITS))


@njit(cache=True, inline="always")
def keep_element(key, index, threshold):
    """u(key, index) >= p_drop, with threshold = keep_threshold(p_drop): SplitMix64's output at index."""
    z = key + (index + ONE) * GOLDEN                   # uint64 throughout: wraps mod 2^64
    z = (z ^ (z >> S30)) * MIX1
    z = (z ^ (z >> S27)) * MIX2
    return ((z ^ (z >> S31)) >> TOP) >= threshold


def keep_threshold(p_drop) -> np.uint64:
    """The 24-bit integer u * 2^24 must reach to keep: u >= p  <=>  u * 2^24 >= ceil(p * 2^24)."""
    return np.uint64(math.ceil(p_drop * 2 ** BITS))


@njit(nogil=True, cache=True, error_model="numpy")
def _forward(lo, hi, x, rows, key, threshold, scale, y, keep):
    # x, y, keep: (R, W); rows: (R,) each row's index in the (*, W) tensor
    W = x.shape[1]
    for r in range(lo, hi):
        xr, yr, kr = x[r], y[r], keep[r]               # row views from 0: they vectorise (threads.py)
        base = np.uint64(rows[r]) * np.uint64(W)
        for j in range(W):
            k = keep_element(key, base + np.uint64(j), threshold)
            kr[j] = k
            yr[j] = xr[j] * scale if k else xr[j] * 0  # x * 0, not 0: the reference's x * mask (NaN stays NaN)


@njit(nogil=True, cache=True, error_model="numpy")
def _backward(lo, hi, dy, keep, scale, dx):
    dy, keep, dx = dy[lo:hi], keep[lo:hi], dx[lo:hi]
    for i in range(dx.size):
        dx[i] = dy[i] * scale if keep[i] else dy[i] * 0


def dropout_forward(x, p_drop, rng):
    # x: (...) -> y: (...); element i of x (flat, C order) is index i
    if rng is None or p_drop == 0.0:
        return x, DropoutCache(None, x.dtype.type(1.0))
    y, cache = dropout_rows_forward(x.reshape(-1, x.shape[-1] if x.ndim else 1), p_drop, dropout_key(rng))
    return y.reshape(x.shape), DropoutCache(cache.keep.reshape(x.shape), cache.scale)


def dropout_rows_forward(x, p_drop, key, rows=None):
    # x: (R, W), rows: (R,) or None (0 .. R-1) -> y: (R, W); element j of row r has index rows[r] * W + j
    x = np.ascontiguousarray(x)
    R, W = x.shape
    rows = np.arange(R, dtype=np.int64) if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
    scale = x.dtype.type(1.0 / (1.0 - p_drop))
    y = empty_apart(x.shape, x.dtype, x)
    keep = empty_apart(x.shape, np.bool_, x, y)
    parallel_for(_forward, R, x, rows, np.uint64(key), keep_threshold(p_drop), scale, y, keep,
                 grain=max(1, GRAIN // max(W, 1)))
    return y, DropoutCache(keep, scale)


def dropout_backward(dy, cache: DropoutCache):
    keep, scale = cache.keep, cache.scale
    if keep is None:
        return dy
    dx = empty_apart(keep.shape, dy.dtype, dy, keep)
    parallel_for(_backward, dx.size, np.ascontiguousarray(dy).reshape(-1), keep.reshape(-1), scale,
                 dx.reshape(-1), grain=GRAIN)
    return dx
