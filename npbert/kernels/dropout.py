"""Inverted dropout for the numba backend, dropping exactly the elements the reference drops.

The uniforms are drawn by the same Generator call as npbert.ops.dropout (float32, shape of x),
so both backends drop the same elements for the same seed; they go into a scratch buffer kept
across calls (no fresh (N,) allocation per call) and one parallel pass turns them into the
output and the 1-byte keep mask of the DropoutCache both backends return.
"""
import numpy as np
from numba import njit

from npbert.kernels.memory import empty_apart
from npbert.kernels.scratch import scratch
from npbert.kernels.threads import parallel_for
from npbert.ops.dropout import DropoutCache

GRAIN = 65536                                          # elements: below this one thread is faster


def uniforms(shape, rng, *apart_from):
    """rng.random(shape, dtype=float32), written into a per-thread buffer that is reused."""
    out = scratch(shape, np.float32, *apart_from, slot="uniforms")
    rng.random(out=out, dtype=np.float32)              # same stream as rng.random(shape, dtype=float32)
    return out


@njit(nogil=True, cache=True, error_model="numpy")
def _forward(lo, hi, x, u, p_drop, scale, y, keep):
    # x, u, y, keep: (N,) flat
    x, u, y, keep = x[lo:hi], u[lo:hi], y[lo:hi], keep[lo:hi]      # index from 0: see threads.py
    for i in range(x.size):
        k = u[i] >= p_drop
        keep[i] = k
        y[i] = x[i] * scale if k else x[i] * 0        # x * 0, not 0: the reference's x * mask (NaN stays NaN)


@njit(nogil=True, cache=True, error_model="numpy")
def _backward(lo, hi, dy, keep, scale, dx):
    dy, keep, dx = dy[lo:hi], keep[lo:hi], dx[lo:hi]
    for i in range(dx.size):
        dx[i] = dy[i] * scale if keep[i] else dy[i] * 0


def dropout_uniforms(shape, rng):
    """The uniforms dropout draws for an x of this shape, in the reused buffer (read them before
    the next draw)."""
    return uniforms(shape, rng)


def dropout_forward(x, p_drop, rng):
    # x: (...) -> y: (...)
    if rng is None or p_drop == 0.0:
        return x, DropoutCache(None, x.dtype.type(1.0))
    x = np.ascontiguousarray(x)
    return dropout_with_uniforms(x, uniforms(x.shape, rng, x), p_drop)


def dropout_with_uniforms(x, u, p_drop):
    # x: (...), u: (...) float32 uniforms drawn for it -> y: (...); keeps where u >= p_drop
    x, u = np.ascontiguousarray(x), np.ascontiguousarray(u)
    scale = x.dtype.type(1.0 / (1.0 - p_drop))
    y = empty_apart(x.shape, x.dtype, x, u)
    keep = empty_apart(x.shape, np.bool_, x, u, y)
    parallel_for(_forward, x.size, x.reshape(-1), u.reshape(-1), np.float32(p_drop), scale, y.reshape(-1),
                 keep.reshape(-1), grain=GRAIN)
    return y, DropoutCache(keep, scale)


def dropout_backward(dy, cache: DropoutCache):
    keep, scale = cache.keep, cache.scale
    if keep is None:
        return dy
    dx = empty_apart(keep.shape, dy.dtype, dy, keep)
    parallel_for(_backward, dx.size, np.ascontiguousarray(dy).reshape(-1), keep.reshape(-1), scale,
                 dx.reshape(-1), grain=GRAIN)
    return dx
