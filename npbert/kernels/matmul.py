"""Matmuls split over npbert's threads: each thread calls BLAS's gemm (one thread,
kernels/gemm.py) on its own block of output rows, inside the same parallel loops as the
other kernels (kernels/threads.py). Blocks of output rows when there are at least as many rows as
columns (each thread reads all of b once), else blocks of columns (the MLM decoder's 640 rows
by 30,522 columns: each thread packs only its part of the 4-15 MB weight).

Why not let OpenBLAS thread them: npbert's other kernels run on npbert's threads, and two
thread pools on the same cores take turns badly (each spins for a while after its work,
while the other wants the core: a gemm and a kernel alternating took 4.2 ms instead of
2.4 ms, measured on 2 cores). One set of threads that runs everything avoids that. Row
blocks start at multiples of 16 rows (whole BLAS micro-tiles); a part computes its rows
with the same gemm as one thread would, so the result depends on the thread count only
through where the blocks start.
"""
import numpy as np
from numba import njit

from npbert.kernels import gemm
from npbert.kernels.threads import num_threads, parallel_for

ROWS = 16                      # rows per block
MIN_FLOP_PER_PART = 2e6        # ~25 us of BLAS: less is not worth a second thread
CALL_BYTES = 2 ** 21           # with a bias, a gemm call writes ~2 MB, then the bias is added while it is
# in cache (the MLM decoder's 78 MB of logits: adding it after the gemm cost 12 ms of 62, measured)


@njit(nogil=True, cache=True)
def _add_bias(out, bias, r0, r1, c0, c1):
    # out[r0:r1, c0:c1] += bias[c0:c1], over row views from 0 (vectorises: see threads.py)
    b = bias[c0:c1]
    for i in range(r0, r1):
        row = out[i, c0:c1]
        for j in range(row.size):
            row[j] += b[j]


@njit(nogil=True, cache=True)
def _blocks(lo, hi, address, a, a_transposed, b, b_transposed, bias, out, by_rows, per_call):
    # blocks [lo, hi) of ROWS rows (by_rows) or columns of out = a @ b (+ bias), `per_call` blocks
    # a gemm call, the bias added to each call's output while it is still in cache. a and b come
    # as stored (C-contiguous, flagged when the operand is their transpose): one compiled
    # version serves every layout the layers use, not one per combination
    a = a.T if a_transposed else a                     # (M, K)
    b = b.T if b_transposed else b                     # (K, N)
    M, N = a.shape[0], b.shape[1]
    for first in range(lo, hi, per_call):
        last = min(first + per_call, hi)
        if by_rows:
            r0, r1, c0, c1 = first * ROWS, min(last * ROWS, M), 0, N
            gemm.gemm(address, a[r0:r1], b, out[r0:r1])
        else:
            r0, r1, c0, c1 = 0, M, first * ROWS, min(last * ROWS, N)
            gemm.gemm(address, a, b[:, c0:c1], out[:, c0:c1])
        if bias.size:
            _add_bias(out, bias, r0, r1, c0, c1)


def _stored(x):
    """(x, False) or (x.T, True), whichever is C-contiguous; x itself when neither is."""
    return (x.T, True) if not x.flags.c_contiguous and x.T.flags.c_contiguous else (x, False)


def matmul(a, b, bias=None, out=None):
    """a @ b (+ bias) for 2-D a (M, K), b (K, N), bias (N,) or None -> (M, N), C-contiguous
    unless out is given (rows of unit stride). NumPy's own matmul where the split cannot apply:
    one thread, dtypes other than float32/float64 or mixed, strides BLAS cannot take, no OpenBLAS."""
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = np.empty((M, N), np.result_type(a, b))
    writable = out.dtype == a.dtype and out.strides[1] == out.itemsize      # rows gemm can write
    address = gemm.address_for(a, b) if num_threads() > 1 and writable else 0
    if not address:
        np.matmul(a, b, out=out)
        if bias is not None:
            out += bias
        return out
    bias = np.empty(0, out.dtype) if bias is None else np.asarray(bias, out.dtype)
    by_rows = M >= N                                   # the token rows: each thread its rows, all of b;
    blocks = -(-(M if by_rows else N) // ROWS)         # else (the MLM decoder) its columns, its part of b
    grain = max(1, int(MIN_FLOP_PER_PART // max(2 * ROWS * K * (N if by_rows else M), 1)))
    per_call = max(1, CALL_BYTES // (ROWS * (N if by_rows else M) * out.itemsize)) if bias.size else blocks
    parallel_for(_blocks, blocks, address, *_stored(a), *_stored(b), bias, out, by_rows, per_call, grain=grain)
    return out
