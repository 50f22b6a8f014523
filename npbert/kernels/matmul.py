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


@njit(nogil=True, cache=True)
def _blocks(lo, hi, address, a, a_transposed, b, b_transposed, bias, out, by_rows):
    # blocks [lo, hi) of ROWS rows (by_rows) or columns of out = a @ b (+ bias), a and b given as
    # stored (C-contiguous, flagged when the operand is their transpose): one compiled version
    # for every layout the layers use, not one per combination
    a = a.T if a_transposed else a                     # (M, K)
    b = b.T if b_transposed else b                     # (K, N)
    if by_rows:
        r0, r1, c0, c1 = lo * ROWS, min(hi * ROWS, a.shape[0]), 0, b.shape[1]
        gemm.gemm(address, a[r0:r1], b, out[r0:r1])
    else:
        r0, r1, c0, c1 = 0, a.shape[0], lo * ROWS, min(hi * ROWS, b.shape[1])
        gemm.gemm(address, a, b[:, c0:c1], out[:, c0:c1])
    if bias.size:                                      # while the block is in cache
        for i in range(r0, r1):
            for j in range(c0, c1):
                out[i, j] += bias[j]


def _stored(x):
    """(x, False) or (x.T, True), whichever is C-contiguous; x itself when neither is."""
    return (x.T, True) if not x.flags.c_contiguous and x.T.flags.c_contiguous else (x, False)


def matmul(a, b, bias=None, out=None):
    """a @ b (+ bias) for 2-D a (M, K), b (K, N), bias (N,) or None -> (M, N), C-contiguous
    unless out is given (rows of unit stride). NumPy's own matmul where the split cannot apply:
    one thread, dtypes other than float32/float64 or mixed, strides BLAS cannot take, no OpenBLAS."""
    M, K = a.shape
    N = b.shape[1]
    address = gemm.address(a.dtype) if a.dtype == b.dtype else 0
    if out is None:
        out = np.empty((M, N), np.result_type(a, b))
    if num_threads() == 1 or not address or not (gemm.usable(a) and gemm.usable(b) and out.strides[1] == out.itemsize):
        np.matmul(a, b, out=out)
        if bias is not None:
            out += bias
        return out
    bias = np.empty(0, out.dtype) if bias is None else np.asarray(bias, out.dtype)
    by_rows = M >= N                                   # the token rows: each thread its rows, all of b;
    blocks = -(-(M if by_rows else N) // ROWS)         # else (the MLM decoder) its columns, its part of b
    grain = max(1, int(MIN_FLOP_PER_PART // max(2 * ROWS * K * (N if by_rows else M), 1)))
    parallel_for(_blocks, blocks, address, *_stored(a), *_stored(b), bias, out, by_rows, grain=grain)
    return out
