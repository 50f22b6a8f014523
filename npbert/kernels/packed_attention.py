"""Self-attention over packed sequences (npbert/ops/packed_attention.py's semantics and cache
record) in one parallel loop over every (sequence, head) unit per call, forward and backward.

Forward, per unit (m query rows, n key rows): scores = q k^T in BLAS's gemm straight into the
unit's block of the flat probabilities, the softmax row by row (attention_core.py's
softmax_row), the dropout keep from the counter-based uniforms of the weights' indices in the
padded (S, A, T, T) probabilities (ops/dropout.py: computed here, for the real weights only),
context = dropped v in gemm into the unit's (rows, head columns) block.
Backward, per unit: dv = dropped^T dcontext, d(dropped) = dcontext v^T, dropout and softmax
backward row by row (attention_core.py's row functions, the 1/sqrt(D) folded in), dq = dS k,
dk = dS^T q, each into the unit's own block of dq/dk/dv, so no two units write the same memory.
A unit with no query rows still writes its dk/dv block (zeros: gemm over an empty inner dimension).

Why: the reference loops over sequences in Python, each with a handful of batched NumPy calls
and ~10 passes over its (A, m, n) scores between the matmuls; a batch of 32 sequences is hundreds of NumPy calls a layer. Here it is one
compiled loop, split over threads by cost (m n per unit; n more for the backward's writes).
The dropped probabilities and score gradients go to one (m, n) C-contiguous buffer per part,
never cached: views of a shared flat buffer reshaped in compiled code keep the C layout too,
which is what makes the row loops vectorise (a strided view was measured 2x slower).
Without OpenBLAS (kernels/gemm.py), or with views BLAS cannot take, the reference runs instead.
"""
import math

import numpy as np
from numba import njit

from npbert.kernels.attention_core import _redrop, _softmax_dropout_backward, softmax_row
from npbert.kernels.dropout import keep_element, keep_threshold
from npbert.kernels.gemm import address_for as gemm_address_for
from npbert.kernels.gemm import gemm
from npbert.kernels.memory import empty_apart
from npbert.kernels.threads import parallel_for
from npbert.ops.packed_attention import PackedAttentionCache, sequence_starts, unit_offsets
from npbert.ops.packed_attention import packed_attention_backward as reference_backward
from npbert.ops.packed_attention import packed_attention_forward as reference_forward


class _Units:
    """Where each unit's rows and probabilities are: the layout as the compiled loops take it."""
    def __init__(self, layout, num_heads):
        self.num_heads = num_heads
        self.q_lengths = np.ascontiguousarray(layout.q_lengths, dtype=np.int64)   # (S,)
        self.k_lengths = np.ascontiguousarray(layout.k_lengths, dtype=np.int64)   # (S,)
        self.q_starts = sequence_starts(self.q_lengths)                           # (S,)
        self.k_starts = sequence_starts(self.k_lengths)                           # (S,)
        self.offsets = unit_offsets(layout, num_heads)                            # (S * A + 1,)
        self.count = len(self.q_lengths) * num_heads
        sizes = np.repeat(self.q_lengths * self.k_lengths, num_heads)             # (S * A,) m n each
        self.largest = int(sizes.max(initial=0))
        self.cost = sizes.astype(np.float64) + np.repeat(self.k_lengths, num_heads)  # (S * A,)

    def args(self):
        return self.num_heads, self.q_lengths, self.k_lengths, self.q_starts, self.k_starts, self.offsets


@njit(nogil=True, cache=True, error_model="numpy")
def _softmax_keep(probs, scale, dropping, key, unit, T, q_pos, k_pos, threshold, drop_scale, keep, dropped):
    # probs: (m, n) scores in, probabilities out; with dropping, keep and dropped (m, n): the weight of
    # query i and key j has index (unit T + q_pos[i]) T + k_pos[j] in the padded (S, A, T, T) probabilities
    n = probs.shape[1]
    no_bias = np.empty(0, probs.dtype)
    first = k_pos[0] if n else 0
    consecutive = True                                 # the keys at first, first + 1, ...: the common case,
    for j in range(n):                                 # indexed without a gather, so the row loop vectorises
        consecutive = consecutive and k_pos[j] == first + j
    for i in range(probs.shape[0]):
        s = probs[i]
        softmax_row(s, no_bias, scale)
        if dropping:
            row = np.uint64((unit * T + q_pos[i]) * T)
            if consecutive:
                _keep_row(s, key, row + np.uint64(first), threshold, drop_scale, keep[i], dropped[i])
            else:
                _keep_gathered(s, key, row, k_pos, threshold, drop_scale, keep[i], dropped[i])


@njit(nogil=True, cache=True, error_model="numpy")
def _keep_row(s, key, start, threshold, drop_scale, keep, dropped):
    # s, keep, dropped: (n,) a row's probabilities -> its keep and dropped probabilities; key j at index start + j
    for j in range(s.size):
        kept = keep_element(key, start + np.uint64(j), threshold)
        keep[j] = kept
        dropped[j] = s[j] * drop_scale if kept else s[j] * 0     # s * 0, not 0: NaN stays NaN


@njit(nogil=True, cache=True, error_model="numpy")
def _keep_gathered(s, key, row, k_pos, threshold, drop_scale, keep, dropped):
    # as _keep_row, key j at index row + k_pos[j]
    for j in range(s.size):
        kept = keep_element(key, row + np.uint64(k_pos[j]), threshold)
        keep[j] = kept
        dropped[j] = s[j] * drop_scale if kept else s[j] * 0


@njit(nogil=True, cache=True, error_model="numpy")
def _forward_units(lo, hi, address, q, k, v, num_heads, q_lengths, k_lengths, q_starts, k_starts, offsets, largest,
                   scale, dropping, key, T, q_positions, k_positions, threshold, drop_scale, probs, keep, context):
    # units [lo, hi) of S * A, unit = s * A + a; q, context: (M, H), k, v: (N, H); probs, keep: (P,) flat
    D = q.shape[1] // num_heads
    buffer = np.empty(largest if dropping else 0, q.dtype)             # (m n,) the dropped probabilities
    for unit in range(lo, hi):
        s, a = unit // num_heads, unit % num_heads
        m, n, r0, k0, c0, p0 = q_lengths[s], k_lengths[s], q_starts[s], k_starts[s], a * D, offsets[unit]
        block = probs[p0:p0 + m * n].reshape((m, n))                   # (m, n) C-contiguous
        gemm(address, q[r0:r0 + m, c0:c0 + D], k[k0:k0 + n, c0:c0 + D].T, block)
        dropped = buffer[:m * n].reshape((m, n)) if dropping else block          # (m, n)
        kept = keep[p0:p0 + m * n].reshape((m, n)) if dropping else keep.reshape((0, 0))
        # `dropping` a runtime flag, not a literal True / False: one compiled _softmax_keep, not two
        _softmax_keep(block, scale, dropping, key, unit, T, q_positions[r0:r0 + m], k_positions[k0:k0 + n],
                      threshold, drop_scale, kept, dropped)
        gemm(address, dropped, v[k0:k0 + n, c0:c0 + D], context[r0:r0 + m, c0:c0 + D])


def packed_attention_forward(q, k, v, layout, num_heads, p_drop=0.0, key=None):
    # q: (M, H), k, v: (N, H), key: the dropout call's key or None -> context (M, H), cache
    address = gemm_address_for(q, k, v)
    dropping = key is not None and p_drop != 0.0
    if not address or dropping and not _covered(layout):
        return reference_forward(q, k, v, layout, num_heads, p_drop, key)  # no OpenBLAS, views BLAS cannot take;
    # or positions the layout's seq_len does not cover (the reference says so)
    units = _Units(layout, num_heads)
    dtype = q.dtype.type
    drop_scale = dtype(1.0 / (1.0 - p_drop) if dropping else 1.0)
    probs = empty_apart((units.offsets[-1],), q.dtype, q, k, v)                   # (P,)
    keep = empty_apart(probs.shape if dropping else (0,), np.bool_, probs)       # (P,) or empty
    context = empty_apart(q.shape, q.dtype, q, k, v, probs)                      # (M, H)
    positions = [np.ascontiguousarray(x, dtype=np.int64) for x in (layout.q_positions, layout.k_positions)]
    parallel_for(_forward_units, units.count, address, q, k, v, *units.args(), units.largest,
                 dtype(1.0 / math.sqrt(q.shape[1] // num_heads)), dropping, np.uint64(key or 0), np.int64(layout.seq_len),
                 *positions, keep_threshold(p_drop), drop_scale, probs, keep, context, cost=units.cost)
    return context, PackedAttentionCache(q, k, v, layout, num_heads, probs, keep if dropping else None, drop_scale)


def _covered(layout) -> bool:
    """Every position is below seq_len: the compiled loop's dropout indices are those of the padded T."""
    return layout.seq_len > max(np.max(layout.q_positions, initial=0), np.max(layout.k_positions, initial=0))


@njit(nogil=True, cache=True, error_model="numpy")
def _backward_units(lo, hi, address, dcontext, q, k, v, num_heads, q_lengths, k_lengths, q_starts, k_starts,
                    offsets, largest, scale, probs, keep, drop_scale, dq, dk, dv):
    # units [lo, hi) of S * A; the (m, n) buffer holds the dropped probabilities, then the score gradient
    D = q.shape[1] // num_heads
    dropping = keep.size > 0
    buffer = np.empty(largest, q.dtype)                                # (m n,)
    for unit in range(lo, hi):
        s, a = unit // num_heads, unit % num_heads
        m, n, r0, k0, c0, p0 = q_lengths[s], k_lengths[s], q_starts[s], k_starts[s], a * D, offsets[unit]
        block = probs[p0:p0 + m * n].reshape((m, n))                   # (m, n) C-contiguous
        kept = keep[p0:p0 + m * n].reshape((m, n)) if dropping else keep.reshape((0, n))
        work = buffer[:m * n].reshape((m, n))
        dc = dcontext[r0:r0 + m, c0:c0 + D]                            # (m, D)
        if dropping:
            _redrop(0, m, block, kept, drop_scale, work)
            gemm(address, work.T, dc, dv[k0:k0 + n, c0:c0 + D])       # dv = dropped^T dcontext
        else:
            gemm(address, block.T, dc, dv[k0:k0 + n, c0:c0 + D])
        gemm(address, dc, v[k0:k0 + n, c0:c0 + D].T, work)             # d(dropped probs)
        _softmax_dropout_backward(0, m, work, block, kept, drop_scale, scale)
        gemm(address, work, k[k0:k0 + n, c0:c0 + D], dq[r0:r0 + m, c0:c0 + D])   # dq = dS k
        gemm(address, work.T, q[r0:r0 + m, c0:c0 + D], dk[k0:k0 + n, c0:c0 + D])  # dk = dS^T q


def packed_attention_backward(dcontext, cache: PackedAttentionCache):
    # dcontext: (M, H) -> dq (M, H), dk (N, H), dv (N, H)
    q, k, v, num_heads = cache.q, cache.k, cache.v, cache.num_heads
    address = gemm_address_for(q, k, v, dcontext)
    if not address:
        return reference_backward(dcontext, cache)                    # no OpenBLAS, or views BLAS cannot take
    units = _Units(cache.layout, num_heads)
    keep = np.empty(0, np.bool_) if cache.keep is None else cache.keep          # (P,) or empty
    dq = empty_apart(q.shape, q.dtype, q, k, v, dcontext)                        # (M, H)
    dk = empty_apart(k.shape, k.dtype, q, k, v, dcontext, dq)                    # (N, H)
    dv = empty_apart(v.shape, v.dtype, q, k, v, dcontext, dq, dk)                # (N, H)
    parallel_for(_backward_units, units.count, address, dcontext, q, k, v, *units.args(), units.largest,
                 q.dtype.type(1.0 / math.sqrt(q.shape[1] // num_heads)), cache.probs, keep, cache.drop_scale,
                 dq, dk, dv, cost=units.cost)
    return dq, dk, dv
