"""Sum of squares (npbert/ops/sum_of_squares.py) in float64, per fixed chunk of elements split
over threads, the chunks then added in order: the same bits for any thread count, and no BLAS
call whose threads would wake next to npbert's."""
import numpy as np
from numba import njit

from npbert.kernels.threads import parallel_for

CHUNK = 65536                                          # elements per partial sum


@njit(nogil=True, cache=True, fastmath={"reassoc"})
def _chunks(lo, hi, x, partial):
    # chunks [lo, hi) of x (n,): partial[c] = sum of x[i]^2 over chunk c, in float64
    for c in range(lo, hi):
        part = x[c * CHUNK:min((c + 1) * CHUNK, x.size)]
        s = 0.0
        for i in range(part.size):
            v = np.float64(part[i])
            s += v * v
        partial[c] = s


def sum_of_squares(x) -> float:
    flat = np.ascontiguousarray(x).reshape(-1)         # (n,)
    chunks = -(-flat.size // CHUNK)
    partial = np.zeros(chunks)                         # (chunks,) float64
    parallel_for(_chunks, chunks, flat, partial)
    return float(partial.sum())
