"""Reductions along a row, written so that LLVM turns them into vector instructions.

Sums and dots (row_sum, row_dot): a plain `s += x[j]` loop is a chain of dependent adds that
LLVM may not reorder without fast-math's reassociation. These two functions carry that one
flag, fastmath={"reassoc"}, and nothing else: they are plain calls (LLVM inlines them; the flag
stays on their own adds), never inlined at Numba IR level, where the caller's flags would
apply instead. Measured over 1M float32 elements in rows of 128: 0.10 ms, against 0.50 ms for
the 16 scalar accumulators used before (the lanes buffer lived in memory, so LLVM could not
rule out that it aliased the row and left every add scalar). The summation order is LLVM's
vector order for this CPU: the same on every run and thread count on one machine, not
necessarily across CPUs with different vector widths (BLAS is not either). Accumulation is in
float64 for float32 rows.
Max and argmax (row_max, row_argmax) keep LANES independent accumulators in the row's dtype:
no fast-math flag made LLVM vectorise a float max here, and the accumulators at least break
the dependency chain.
Keep exp out of these loops (write exp to a buffer in a plain loop, then sum it): with an exp
in the body LLVM stops vectorising the reduction.
"""
import math

import numpy as np
from numba import njit

LANES = 16


@njit(cache=True, inline="always")
def lanes_like(x):
    """Accumulators for a max: the row's own dtype (a max is exact in any dtype), so a float32
    row's max stays float32 and `x[j] - m` does not become float64 (fast_exp in float64 is the
    degree-13 version: measured 2x slower over the MLM logits)."""
    return np.empty(LANES, x.dtype)


@njit(cache=True, inline="always")
def row_max(x, acc):
    # acc: lanes_like(x)
    acc[:] = -np.inf
    n = x.size - x.size % LANES
    for j in range(0, n, LANES):
        for u in range(LANES):
            acc[u] = max(acc[u], x[j + u])
    m = lanes_max(acc)
    for j in range(n, x.size):
        m = max(m, x[j])
    return m


@njit(cache=True, inline="always")
def lanes_max(acc):
    """acc.max() as NumPy (and Numba's array max) takes it: the first NaN, else the largest, the first
    of equals; a loop, not Numba's generic reduction, which costs ~0.5 s to compile."""
    m = acc[0]
    if math.isnan(m):
        return m
    for u in range(1, acc.size):
        v = acc[u]
        if math.isnan(v):
            return v
        if v > m:
            m = v
    return m


@njit(cache=True, inline="always")
def row_argmax(x, acc, at):
    """(max, index of its first occurrence), like np.argmax; acc: lanes_like(x), at: index_lanes()."""
    acc[:] = -np.inf
    at[:] = 0
    n = x.size - x.size % LANES
    for j in range(0, n, LANES):
        for u in range(LANES):
            if x[j + u] > acc[u]:                      # strict: each lane keeps its first maximum
                acc[u], at[u] = x[j + u], j + u
    m, k = acc[0], at[0]
    for u in range(1, LANES):                             # the lanes' best, earliest index on ties
        if acc[u] > m or (acc[u] == m and at[u] < k):
            m, k = acc[u], at[u]
    for j in range(n, x.size):
        if x[j] > m:
            m, k = x[j], j
    return m, k


@njit(cache=True, inline="always")
def index_lanes():
    return np.empty(LANES, np.int64)


@njit(cache=True, fastmath={"reassoc"})
def row_sum(x):
    # float64 sum; not inlined at Numba IR level, so the flag stays on these adds only
    s = 0.0
    for j in range(x.size):
        s += x[j]
    return s


@njit(cache=True, fastmath={"reassoc"})
def row_dot(x, y):
    s = 0.0
    for j in range(x.size):
        s += x[j] * y[j]
    return s
