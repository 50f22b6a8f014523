"""Self-attention over packed sequences (npbert/ops/packed_attention.py's semantics) in one
parallel loop over every (sequence, head): per unit, scores = q k^T in BLAS's gemm, the
softmax row by row (attention_core.py's softmax_row), context = probs v in gemm, into the
unit's own block of the packed (N, H) output.

The reference makes one attention_core_forward call per run of equal-length sequences: a
batch of 32 random lengths is ~30 calls a layer, each with its own Python work and its own
short parallel loop. Here it is one loop, split by cost (n_s^2 per unit) so that each thread
gets as much work. No mask: a sequence's
keys are exactly its own rows.
"""
import math

import numpy as np
from numba import njit

from npbert.kernels.attention_core import softmax_row
from npbert.kernels.gemm import address_for as gemm_address_for
from npbert.kernels.gemm import gemm
from npbert.kernels.rowops import lanes_like
from npbert.kernels.threads import parallel_for
from npbert.ops.packed_attention import packed_attention as reference
from npbert.ops.packed_attention import sequence_starts


@njit(nogil=True, cache=True, error_model="numpy")
def _units(lo, hi, address, q, k, v, starts, lengths, num_heads, scale, context):
    # units [lo, hi) of S * A, unit = s * A + a; q, k, v, context: (N, H); the head's columns a*D:(a+1)*D
    D = q.shape[1] // num_heads
    no_bias = np.empty(0, q.dtype)
    max_acc = lanes_like(no_bias)
    for unit in range(lo, hi):
        s, a = unit // num_heads, unit % num_heads
        r0, n, c0 = starts[s], lengths[s], a * D
        if n == 0:
            continue
        probs = np.empty((n, n), q.dtype)              # (n, n) C-contiguous: a view of a larger buffer
        # would be typed with unknown strides, and the softmax rows would not vectorise (2x slower)
        gemm(address, q[r0:r0 + n, c0:c0 + D], k[r0:r0 + n, c0:c0 + D].T, probs)
        for i in range(n):
            softmax_row(probs[i], no_bias, scale, max_acc)
        gemm(address, probs, v[r0:r0 + n, c0:c0 + D], context[r0:r0 + n, c0:c0 + D])


def packed_attention(q, k, v, lengths, num_heads):
    # q, k, v: (N, H) packed, lengths: (S,) -> context (N, H)
    address = gemm_address_for(q, k, v)
    if not address:
        return reference(q, k, v, lengths, num_heads)  # no OpenBLAS to call, or views BLAS cannot take
    N, H = q.shape
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)                      # (S,)
    starts = sequence_starts(lengths)                                            # (S,)
    context = np.empty_like(q)                                                   # (N, H)
    cost = np.repeat(lengths.astype(np.float64) ** 2, num_heads)                 # (S * A,)
    parallel_for(_units, len(lengths) * num_heads, address, q, k, v, starts, lengths, num_heads,
                 q.dtype.type(1.0 / math.sqrt(H // num_heads)), context, cost=cost)
    return context
