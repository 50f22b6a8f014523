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
Max (row_max): the floats' bits read as integers, mapped so that integer order is float order
(negative floats have their other bits flipped), and an integer max, which LLVM vectorises with
no flag (a float max it would not: NaN's rules); a NaN seen is counted in a second integer
reduction. 0.28 -> 0.10 ns an element over float32 rows of 512 (AMD EPYC AVX-512). Argmax
(row_argmax) keeps LANES independent accumulators in the row's dtype, which at least break the
dependency chain.
Keep exp out of these loops (write exp to a buffer in a plain loop, then sum it): with an exp
in the body LLVM stops vectorising the reduction.
"""
import numpy as np
from numba import njit, types
from numba.extending import overload

from npbert.kernels.fastexp import _bits_to_float, _float_to_bits

LANES = 16


@njit(cache=True, inline="always")
def lanes_like(x):
    """Accumulators for a max: the row's own dtype (a max is exact in any dtype), so a float32
    row's max stays float32 and `x[j] - m` does not become float64 (fast_exp in float64 is the
    degree-13 version: measured 2x slower over the MLM logits)."""
    return np.empty(LANES, x.dtype)


def row_max(x):
    """The largest element of a float row, as np.max gives it: NaN if the row has one, -inf
    if it is empty; +0.0 over -0.0 (equal values: np.max may give either). Compiled per float width
    below (as fastexp.by_width does); plain Python never calls it."""
    return np.max(x)


def _ordered_max(float_type, int_type):
    """row_max for one float width: each float's bits b read as int_type and keyed b ^ ((b >> width - 1)
    & rest) (rest: every bit but the sign), which orders the keys as the floats (-0.0 below +0.0)
    and is its own inverse."""
    shift = int_type(8 * np.dtype(int_type).itemsize - 1)
    rest = int_type(np.iinfo(int_type).max)
    minus_inf = np.array([-np.inf], float_type).view(int_type)[0]
    lowest = int_type(minus_inf ^ ((minus_inf >> shift) & rest))     # the key of -inf: an empty row's max
    not_a_number = float_type(np.nan)

    @njit(cache=True)
    def ordered_max(x):
        best, nan = lowest, int_type(0)
        for j in range(x.size):
            b = _float_to_bits(x[j])                                  # not x.view: its error path compiles
            best = max(best, int_type(b ^ ((b >> shift) & rest)))    # Numba widens int32 arithmetic to int64
            nan |= int_type(x[j] != x[j])
        if nan:
            return not_a_number
        return _bits_to_float(int_type(best ^ ((best >> shift) & rest)))
    return ordered_max


_max32 = _ordered_max(np.float32, np.int32)
_max64 = _ordered_max(np.float64, np.int64)


@overload(row_max)
def _row_max_overload(x):
    if isinstance(x, types.Array) and isinstance(x.dtype, types.Float):
        return (lambda x: _max32(x)) if x.dtype.bitwidth == 32 else (lambda x: _max64(x))


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
