"""The attention core: per (batch, head) unit, the four small matmuls in BLAS's gemm
(kernels/gemm.py) and everything between them (scale, additive mask, softmax, dropout; in
backward dropout and softmax backward) as one fused pass over each row of scores; the units
are split over threads, each unit done start to end by one thread in one parallel loop.

Same semantics as npbert.ops.attention_core.attention_core_forward/backward, and the same
cache record. Why this split, from measurement (docs/performance.md): a (T, D) x (D, T) head
matmul in hand-written Numba loops ran at 11-40 GFLOP/s, OpenBLAS at ~65; the reference's cost
is the ~12 NumPy passes over the (B, A, T, T) scores it makes between the matmuls, which the
fused passes replace; and one parallel loop per call, not one per matmul and pass, is what
makes two threads pay (a loop's start costs 5-8 us). Where the memory differs from the reference:
- the dropped probabilities and the score gradients live in one (B, A, T, T) scratch buffer
  reused by every call, never cached;
- context, dq, dk, dv are (B, A, T, D) views of (B, T, A, D) arrays, so merge_heads after
  them is a free reshape instead of a transposing copy.
Dropout's uniforms are the reference's counter-based ones (ops/dropout.py), computed in the
softmax's pass from the call's key and each weight's flat index in (B, A, T, T), so both
backends drop the same attention weights for the same seed.
Without OpenBLAS (kernels/gemm.py) the matmuls are NumPy's batched ones around the row passes.
softmax_row is compiled with fastexp.FMA (scale + mask and exp's polynomial as fused multiply-adds).
"""
import math

import numpy as np
from numba import njit

from npbert.kernels.dropout import keep_element, keep_threshold
from npbert.kernels.fastexp import FMA, fast_exp
from npbert.kernels.gemm import address_for as gemm_address_for
from npbert.kernels.gemm import gemm
from npbert.kernels.memory import empty_apart
from npbert.kernels.rowops import row_dot, row_max, row_sum
from npbert.kernels.scratch import scratch
from npbert.ops.dropout import dropout_key
from npbert.kernels.threads import parallel_for
from npbert.ops.attention_core import AttentionCoreCache


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FMA)
def softmax_row(s, bias, scale):
    # s: (T,) scores in, softmax(s * scale + bias) out; bias: (T,), or empty for none
    T = s.size
    if bias.size:
        for j in range(T):
            s[j] = s[j] * scale + bias[j]
    else:
        for j in range(T):
            s[j] = s[j] * scale
    m = row_max(s)
    for j in range(T):
        s[j] = fast_exp(s[j] - m)
    z = row_sum(s)
    for j in range(T):
        s[j] = s[j] / z


@njit(nogil=True, cache=True, error_model="numpy")
def _softmax_dropout(lo, hi, probs, mask_bias, scale, key, threshold, drop_scale, keep, dropped):
    # probs, dropped: (R, T) rows of (B, A, T, T), scores in, probabilities out; mask_bias: (B, T);
    # dropping when keep is (R, T): weight (r, j) has index r T + j
    R, T = probs.shape
    rows_per_batch = R // mask_bias.shape[0]           # A * T query rows per sequence
    dropping = keep.shape[0] > 0
    for r in range(lo, hi):
        s = probs[r]
        softmax_row(s, mask_bias[r // rows_per_batch], scale)
        if dropping:
            kr, dr, start = keep[r], dropped[r], np.uint64(r * T)
            for j in range(T):
                k = keep_element(key, start + np.uint64(j), threshold)
                kr[j] = k
                dr[j] = s[j] * drop_scale if k else s[j] * 0


@njit(nogil=True, cache=True, error_model="numpy")
def _redrop(lo, hi, probs, keep, drop_scale, dropped):
    # dropped = probs * keep * drop_scale, (R, T) rows
    for r in range(lo, hi):
        for j in range(probs.shape[1]):
            dropped[r, j] = probs[r, j] * drop_scale if keep[r, j] else probs[r, j] * 0


@njit(nogil=True, cache=True, error_model="numpy")
def _softmax_dropout_backward(lo, hi, grad, probs, keep, drop_scale, scale):
    # grad: (R, T) d(dropped probs) in, d(q k^T) out
    T = probs.shape[1]
    dropping = keep.shape[0] > 0
    for r in range(lo, hi):
        g, p = grad[r], probs[r]
        if dropping:
            for j in range(T):
                g[j] = g[j] * drop_scale if keep[r, j] else g[j] * 0
        dot = row_dot(g, p)
        for j in range(T):                             # softmax backward, scale folded in
            g[j] = p[j] * (g[j] - dot) * scale


@njit(nogil=True, cache=True, error_model="numpy")
def _forward_units(lo, hi, address, q, k, v, probs, mask_bias, scale, key, threshold, drop_scale, keep, dropped,
                   context):
    # units [lo, hi) of B * A: scores = q k^T, softmax (+ dropout) row by row, context = dropped v
    A, T = q.shape[1], q.shape[2]
    for unit in range(lo, hi):
        b, a = unit // A, unit % A
        gemm(address, q[b, a], k[b, a].T, probs[b, a])
        _softmax_dropout(unit * T, (unit + 1) * T, probs.reshape(-1, T), mask_bias, scale, key, threshold,
                         drop_scale, keep, dropped)
        gemm(address, dropped[unit * T:(unit + 1) * T], v[b, a], context[b, a])


@njit(nogil=True, cache=True, error_model="numpy")
def _backward_units(lo, hi, address, dcontext, q, k, v, probs, keep, drop_scale, scale, work, dq, dk, dv):
    # units [lo, hi) of B * A; work: (R, T) scratch, the dropped probabilities then the score gradient
    A, T = q.shape[1], q.shape[2]
    rows = probs.reshape(-1, T)
    for unit in range(lo, hi):
        b, a = unit // A, unit % A
        r0, r1 = unit * T, (unit + 1) * T
        if keep.shape[0]:
            _redrop(r0, r1, rows, keep, drop_scale, work)
            gemm(address, work[r0:r1].T, dcontext[b, a], dv[b, a])          # dv = dropped^T dcontext
        else:
            gemm(address, rows[r0:r1].T, dcontext[b, a], dv[b, a])
        gemm(address, dcontext[b, a], v[b, a].T, work[r0:r1])              # d(dropped probs)
        _softmax_dropout_backward(r0, r1, work, rows, keep, drop_scale, scale)
        gemm(address, work[r0:r1], k[b, a], dq[b, a])                      # dq = dscores k
        gemm(address, work[r0:r1].T, q[b, a], dk[b, a])                    # dk = dscores^T q


def _heads_view(B, A, T, D, dtype):
    """(B, A, T, D) view of a fresh (B, T, A, D) array: merge_heads of it needs no copy."""
    return np.empty((B, T, A, D), dtype).transpose(0, 2, 1, 3)


def _gemm_address(*arrays):
    """cblas gemm's address when every (B, A, T, D) array's head views can go to it as they are
    (the first head's view stands for all: they share strides), else 0 (NumPy's matmul)."""
    B, A = arrays[0].shape[:2]
    return gemm_address_for(*(x[0, 0] for x in arrays)) if B and A else 0


def attention_core_forward(q, k, v, mask_bias, p_drop, rng):
    # q, k, v: (B, A, T, D), mask_bias: (B, T)
    B, A, T, D = q.shape
    dtype = q.dtype.type
    dropping = rng is not None and p_drop != 0.0
    probs = np.empty((B, A, T, T), q.dtype)           # scores, made probabilities in place
    rows = probs.reshape(B * A * T, T)                 # (R, T)
    key = np.uint64(dropout_key(rng) if dropping else 0)
    dropped = scratch(rows.shape, q.dtype, rows) if dropping else rows    # (R, T)
    keep = empty_apart(rows.shape if dropping else (0, T), np.bool_, rows, dropped)   # (R, T) or empty
    drop_scale = dtype(1.0 / (1.0 - p_drop) if dropping else 1.0)
    scale = dtype(1.0 / math.sqrt(D))
    context = _heads_view(B, A, T, D, q.dtype)        # (B, A, T, D)
    address = _gemm_address(q, k, v)
    if address:
        parallel_for(_forward_units, B * A, address, q, k, v, probs, mask_bias, scale, key, keep_threshold(p_drop),
                     drop_scale, keep, dropped, context, grain=max(1, 64 // T))
    else:
        np.matmul(q, k.swapaxes(-1, -2), out=probs)
        parallel_for(_softmax_dropout, len(rows), rows, mask_bias, scale, key, keep_threshold(p_drop), drop_scale,
                     keep, dropped, grain=64)
        np.matmul(dropped.reshape(B, A, T, T), v, out=context)
    return context, AttentionCoreCache(q, k, v, probs, keep.reshape(B, A, T, T) if dropping else None, drop_scale,
                                       1.0 / math.sqrt(D))


def attention_core_backward(dcontext, cache: AttentionCoreCache):
    # dcontext: (B, A, T, D)
    q, k, v, probs, drop_scale = cache.q, cache.k, cache.v, cache.probs, cache.drop_scale
    B, A, T, D = q.shape
    rows = probs.reshape(B * A * T, T)                 # (R, T)
    keep = np.empty((0, T), np.bool_) if cache.keep is None else cache.keep.reshape(rows.shape)  # (R, T) or empty
    work = scratch(rows.shape, q.dtype, rows, keep)    # (R, T) dropped probs, then the score gradient
    dq, dk, dv = (_heads_view(B, A, T, D, q.dtype) for _ in range(3))  # (B, A, T, D) each
    scale = q.dtype.type(1.0 / math.sqrt(D))
    address = _gemm_address(q, k, v, dcontext)
    if address:
        parallel_for(_backward_units, B * A, address, dcontext, q, k, v, probs, keep, drop_scale, scale, work,
                     dq, dk, dv, grain=max(1, 64 // T))
        return dq, dk, dv
    if keep.shape[0]:
        parallel_for(_redrop, len(rows), rows, keep, drop_scale, work, grain=64)
    np.matmul((work if keep.shape[0] else rows).reshape(B, A, T, T).swapaxes(-1, -2), dcontext, out=dv)
    np.matmul(dcontext, v.swapaxes(-1, -2), out=work.reshape(B, A, T, T))  # d(dropped probs)
    parallel_for(_softmax_dropout_backward, len(rows), work, rows, keep, drop_scale, scale, grain=64)
    grad = work.reshape(B, A, T, T)                    # (B, A, T, T) d(q k^T)
    np.matmul(grad, k, out=dq)
    np.matmul(grad.swapaxes(-1, -2), q, out=dk)
    return dq, dk, dv
