"""The attention core, fused per (batch, head): scores, scale, additive mask, softmax,
dropout and context in one pass over each query row; (batch, head) pairs split over threads.

Same semantics as npbert.ops.attention.attention_core_forward/backward. Differences in what
is stored, not in what is computed:
- no (B, A, T, T) scores or dropped-probabilities arrays: a row of scores lives in a (T,)
  buffer; the cache keeps the probabilities (needed by softmax backward) and a 1-byte keep
  mask instead of the reference's probs, probs_dropped and a mask of the input's dtype;
- context, dq, dk, dv are returned as (B, A, T, D) views of (B, T, A, D) arrays, so
  merge_heads after them is a free reshape instead of a transposing copy.
Dropout uniforms are drawn by the same Generator call as the reference's dropout on the
probabilities, so both backends drop the same attention weights for the same seed.
Each head's q, k, v are first copied into small contiguous buffers (k and v transposed where
the inner loop runs over keys), so every inner loop is unit-stride and vectorises.
"""
import math

import numpy as np
from numba import njit

from npbert.kernels.dropout import uniforms
from npbert.kernels.fastexp import fast_exp
from npbert.kernels.threads import parallel_for


@njit(cache=True, inline="always")
def _load(src, b, h, transpose):
    # src: (B, A, T, D) any strides -> (T, D), or (D, T) if transpose, contiguous
    T, D = src.shape[2], src.shape[3]
    dst = np.empty((D, T) if transpose else (T, D), src.dtype)
    for t in range(T):
        for d in range(D):
            if transpose:
                dst[d, t] = src[b, h, t, d]
            else:
                dst[t, d] = src[b, h, t, d]
    return dst


@njit(cache=True, inline="always")
def _store(src, dst, b, h):
    # src: (T, D) -> dst[b, h]: (T, D) any strides
    for t in range(src.shape[0]):
        for d in range(src.shape[1]):
            dst[b, h, t, d] = src[t, d]


@njit(nogil=True, cache=True, error_model="numpy")
def _forward(lo, hi, q, k, v, mask_bias, u, p_drop, drop_scale, scale, context, probs, keep):
    # q, k, v, context: (B, A, T, D); mask_bias: (B, T); u, probs, keep: (B, A, T, T) or empty
    A, T, D = q.shape[1], q.shape[2], q.shape[3]
    dropping = u.shape[0] > 0
    s = np.empty(T, q.dtype)                           # one row of scores, then of probabilities
    ctx = np.empty(D, q.dtype)                         # one row of context
    for bh in range(lo, hi):
        b, h = bh // A, bh % A
        qb, kt, vb = _load(q, b, h, False), _load(k, b, h, True), _load(v, b, h, False)
        for i in range(T):
            s[:] = 0
            for d in range(D):                         # scores = q k^T
                qd = qb[i, d]
                for j in range(T):
                    s[j] += qd * kt[d, j]
            m = -np.inf
            for j in range(T):
                s[j] = s[j] * scale + mask_bias[b, j]
                m = max(m, s[j])
            z = 0.0
            for j in range(T):
                s[j] = fast_exp(s[j] - m)
                z += s[j]
            ctx[:] = 0
            for j in range(T):
                pj = s[j] / z
                probs[b, h, i, j] = pj
                if dropping:
                    kj = u[b, h, i, j] >= p_drop
                    keep[b, h, i, j] = kj
                    pj = pj * drop_scale if kj else pj * 0
                for d in range(D):                     # context = dropped_probs v
                    ctx[d] += pj * vb[j, d]
            for d in range(D):
                context[b, h, i, d] = ctx[d]


@njit(nogil=True, cache=True, error_model="numpy")
def _backward(lo, hi, dcontext, q, k, v, probs, keep, drop_scale, scale, dq, dk, dv):
    # dcontext, q, k, v, dq, dk, dv: (B, A, T, D); probs, keep: (B, A, T, T) or empty
    A, T, D = q.shape[1], q.shape[2], q.shape[3]
    dropping = keep.shape[0] > 0
    dp = np.empty(T, q.dtype)                          # one row of d(probabilities)
    for bh in range(lo, hi):
        b, h = bh // A, bh % A
        qb, kb, vt, dcb = _load(q, b, h, False), _load(k, b, h, False), _load(v, b, h, True), \
            _load(dcontext, b, h, False)
        dqb, dkb, dvb = np.zeros((T, D), q.dtype), np.zeros((T, D), q.dtype), np.zeros((T, D), q.dtype)
        for i in range(T):
            dp[:] = 0
            for d in range(D):                         # d(dropped probs) = dcontext v^T
                c = dcb[i, d]
                for j in range(T):
                    dp[j] += c * vt[d, j]
            dot = 0.0
            for j in range(T):
                pj = probs[b, h, i, j]
                mj = drop_scale if not dropping or keep[b, h, i, j] else drop_scale * 0  # drop_scale is 1
                pd = pj * mj                                                             # if not dropping
                for d in range(D):                     # dv = dropped_probs^T dcontext
                    dvb[j, d] += pd * dcb[i, d]
                dp[j] = dp[j] * mj
                dot += dp[j] * pj
            for j in range(T):                         # softmax backward, scale folded in
                g = probs[b, h, i, j] * (dp[j] - dot) * scale
                for d in range(D):
                    dqb[i, d] += g * kb[j, d]
                    dkb[j, d] += g * qb[i, d]
        _store(dqb, dq, b, h)
        _store(dkb, dk, b, h)
        _store(dvb, dv, b, h)


def _heads_view(B, A, T, D, dtype):
    """(B, A, T, D) view of a fresh (B, T, A, D) array: merge_heads of it needs no copy."""
    return np.empty((B, T, A, D), dtype).transpose(0, 2, 1, 3)


def attention_core_forward(q, k, v, mask_bias, p_drop, rng):
    # q, k, v: (B, A, T, D), mask_bias: (B, T)
    B, A, T, D = q.shape
    dtype = q.dtype.type
    scale = dtype(1.0 / math.sqrt(D))
    dropping = rng is not None and p_drop != 0.0
    u = uniforms((B, A, T, T), rng) if dropping else np.empty((0, 0, 0, 0), np.float32)  # (B, A, T, T)
    keep = np.empty(u.shape, np.bool_)
    drop_scale = dtype(1.0 / (1.0 - p_drop) if dropping else 1.0)
    context = _heads_view(B, A, T, D, q.dtype)        # (B, A, T, D)
    probs = np.empty((B, A, T, T), q.dtype)            # (B, A, T, T)
    parallel_for(_forward, B * A, q, k, v, mask_bias, u, np.float32(p_drop), drop_scale, scale,
                 context, probs, keep)
    return context, (q, k, v, probs, keep, drop_scale, scale)


def attention_core_backward(dcontext, cache):
    # dcontext: (B, A, T, D)
    q, k, v, probs, keep, drop_scale, scale = cache
    dq, dk, dv = (_heads_view(*q.shape, q.dtype) for _ in range(3))  # (B, A, T, D) each
    parallel_for(_backward, q.shape[0] * q.shape[1], dcontext, q, k, v, probs, keep, drop_scale, scale,
                 dq, dk, dv)
    return dq, dk, dv
