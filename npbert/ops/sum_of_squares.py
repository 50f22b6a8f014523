"""The sum of the squares of an array's elements, as a Python float: the gradients' global
norm for clipping is the square root of its sum over every gradient (npbert/optim.py).

The reference is NumPy's dot of the flattened array with itself (BLAS's ?dot). The numba
backend sums in float64 per fixed chunk over its own threads (kernels/sum_of_squares.py): a
BLAS dot of a million elements runs on BLAS's own threads, which then spin for a while next
to npbert's (kernels/threads.py says why that costs)."""
import numpy as np


def sum_of_squares(x) -> float:
    flat = np.ascontiguousarray(x).reshape(-1)         # (n,)
    return float(np.dot(flat, flat))
