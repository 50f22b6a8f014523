"""The numba backend's matmuls and its parallel loops: BLAS's gemm called from compiled code
(npbert/kernels/gemm.py) held to NumPy's matmul for every layout a layer hands it (transposed
views, head slices, strided outputs); the split over threads (kernels/matmul.py) held to it
for 1 to 4 threads, rows and columns; the fallbacks (other dtypes, strides BLAS cannot take,
no OpenBLAS) exactly NumPy's; and the loops' parts (kernels/threads.py). Packed attention's
kernel, which calls gemm per (sequence, head), is held to its reference in model/test_packed_attention.py.

Tolerances as in kernels/test_each_kernel.py: float64 1e-12, float32 1e-5 of the largest |term| sum
(a matmul's rounding scales with sum |a_ik b_kj|, not with the result)."""
from unittest import mock

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

from npbert import kernels, ops
from npbert.kernels import blas, gemm, matmul, threads
from npbert.kernels.threads import parallel_for, part_bounds
from support.patience import HANG_SECONDS

TOL = {np.float64: 1e-12, np.float32: 1e-5}
DTYPES = [np.float64, np.float32]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
needs_openblas = pytest.mark.skipif(not blas.available(), reason="NumPy does not use OpenBLAS here")


def normal(seed, shape, dtype):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def assert_matmul_close(got, a, b, dtype, bias=None):
    want = a.astype(np.float64) @ b.astype(np.float64) + (0 if bias is None else bias.astype(np.float64))
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert got.shape == want.shape and got.dtype == dtype
    assert np.all(np.abs(got - want) <= TOL[dtype] * max(scale.max(initial=0.0), 1.0))


def layout(x, kind):
    """x (m, n) as a layer may hand it over: C-contiguous, a transposed view of an (n, m) array,
    the first columns of a wider array (a head's slice), or every other row of a taller one."""
    m, n = x.shape
    if kind == "transposed":
        return np.ascontiguousarray(x.T).T
    if kind == "columns":
        wide = np.zeros((m, n + 3), x.dtype)
        wide[:, :n] = x
        return wide[:, :n]
    if kind == "rows":
        tall = np.zeros((2 * m, n), x.dtype)
        tall[::2] = x
        return tall[::2]
    return x


LAYOUTS = st.sampled_from(["C", "transposed", "columns", "rows"])


@needs_openblas
@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(m=st.integers(0, 40), k=st.integers(0, 40), n=st.integers(0, 40), la=LAYOUTS, lb=LAYOUTS,
       wide_out=st.booleans(), seed=st.integers(0, 999))
def test_gemm_is_numpys_matmul_for_every_layout(dtype, m, k, n, la, lb, wide_out, seed):
    a, b = layout(normal(seed, (m, k), dtype), la), layout(normal(seed + 1, (k, n), dtype), lb)
    assert gemm.usable(a) and gemm.usable(b)
    out = np.full((m, n + 2 * wide_out), np.nan, dtype)[:, :n]        # rows of a wider array, like a head's
    gemm.gemm(gemm.address(dtype), a, b, out)
    assert_matmul_close(out, a, b, dtype)


@needs_openblas
def test_gemm_compiles_one_version_for_every_layout():
    # C, transposed (F) and sliced (A) views all reach one compiled _gemm of layout A (a cold start
    # compiled one per combination: benchmarks/cold_start.py), and gemm_add accumulates
    @njit                                    # compiled here (not cached): it resolves _gemm's versions
    def product_twice(address, a, b, out):
        gemm.gemm(address, a, b, out)
        gemm.gemm_add(address, a, b, out)

    a, b = normal(0, (6, 5), np.float32), normal(1, (5, 4), np.float32)
    for la in ("C", "transposed", "columns", "rows"):
        for lb in ("C", "transposed", "columns"):
            out = np.zeros((6, 4), np.float32)
            product_twice(gemm.address(np.float32), layout(a, la), layout(b, lb), out)
            assert_matmul_close(out, 2 * a, b, np.float32)
    float32 = [s for s in gemm._gemm.signatures if s[1].dtype == numba.float32]
    assert [tuple(t.layout for t in s[1:4]) for s in float32] == [("A", "A", "A")]


def test_usable_refuses_strides_blas_cannot_take():
    x = np.arange(12.0).reshape(3, 4)
    assert gemm.usable(x) and gemm.usable(x.T) and gemm.usable(x[:, 1:3]) and gemm.usable(x[::2])
    assert not gemm.usable(x[::-1])                                    # negative stride
    assert not gemm.usable(x[:, ::2])                                  # no unit stride
    assert not gemm.usable(np.broadcast_to(np.arange(4.0), (3, 4)))    # rows overlap (stride 0)
    assert not gemm.usable(np.arange(4.0))                             # not 2-D
    assert gemm.address(np.int64) == 0 and gemm.address(np.complex128) == 0
    assert gemm.address_for(x, x.T) and not gemm.address_for(x, x.astype(np.float32)) and not gemm.address_for(x, x[::-1])


@needs_openblas
@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(m=st.integers(1, 90), k=st.integers(1, 30), n=st.integers(1, 90), la=LAYOUTS, lb=LAYOUTS,
       with_bias=st.booleans(), n_threads=st.integers(1, 4), seed=st.integers(0, 999))
def test_split_matmul_is_numpys_matmul(dtype, m, k, n, la, lb, with_bias, n_threads, seed):
    # every part size (no minimum work), rows when m >= n, columns when m < n
    a, b = layout(normal(seed, (m, k), dtype), la), layout(normal(seed + 1, (k, n), dtype), lb)
    bias = normal(seed + 2, n, dtype) if with_bias else None
    with mock.patch.dict("os.environ", {"NPBERT_NUM_THREADS": str(n_threads)}), \
            mock.patch.object(matmul, "MIN_FLOP_PER_PART", 0):
        got = matmul.matmul(a, b, bias)
    assert got.flags.c_contiguous
    assert_matmul_close(got, a, b, dtype, bias)


@pytest.mark.parametrize("a, b", [
    (np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4)),                    # integers: no gemm
    (np.ones((4, 3), np.float32), np.ones((3, 5))),                                # mixed dtypes
    (np.arange(12.0).reshape(4, 3)[::-1], np.arange(15.0).reshape(3, 5)),          # negative stride
    (np.arange(24.0).reshape(4, 6)[:, ::2], np.arange(15.0).reshape(3, 5)),        # no unit stride
])
def test_matmul_falls_back_to_numpy_exactly(a, b):
    with mock.patch.dict("os.environ", {"NPBERT_NUM_THREADS": "2"}):
        np.testing.assert_array_equal(matmul.matmul(a, b), np.matmul(a, b))
        np.testing.assert_array_equal(matmul.matmul(a, b, np.ones(b.shape[1], b.dtype)), np.matmul(a, b) + 1)


def test_matmul_without_openblas_is_numpys(monkeypatch):
    a, b = normal(0, (64, 8), np.float32), normal(1, (8, 64), np.float32)
    monkeypatch.setattr(gemm, "address", lambda dtype: 0)
    monkeypatch.setenv("NPBERT_NUM_THREADS", "2")
    np.testing.assert_array_equal(matmul.matmul(a, b), np.matmul(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_kernel_matches_the_reference(dtype, monkeypatch):
    # split over 2 threads (rows, then dW's rows), bias added in the parts; float64 to 1e-12
    monkeypatch.setenv("NPBERT_NUM_THREADS", "2")
    monkeypatch.setattr(matmul, "MIN_FLOP_PER_PART", 0)
    x, w, b, dy = normal(0, (3, 50, 7), dtype), normal(1, (9, 7), dtype), normal(2, 9, dtype), normal(3, (3, 50, 9), dtype)
    y, cache = kernels.linear_forward(x, w, b)
    y_ref, cache_ref = ops.linear_forward(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64))
    assert y.shape == (3, 50, 9)
    assert np.abs(y - y_ref).max() <= TOL[dtype] * 10
    for got, want in zip(kernels.linear_backward(dy, cache), ops.linear_backward(dy.astype(np.float64), cache_ref)):
        assert got.dtype == dtype and np.abs(got - want).max() <= TOL[dtype] * 100


@needs_openblas
def test_blas_runs_one_thread_inside_a_parallel_loop_and_as_before_after():
    before = blas.get_num_threads()
    blas.set_num_threads(2)
    try:
        with blas.single_threaded():
            assert blas.get_num_threads() == 1
        assert blas.get_num_threads() == 2
    finally:
        blas.set_num_threads(before)


# --- the parallel loops ------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def _count(lo, hi, counts):
    for i in range(lo, hi):
        counts[i] += 1


@pytest.mark.parametrize("n_threads", ["1", "2", "3", "4"])
def test_parallel_for_covers_the_range_once(monkeypatch, n_threads):
    monkeypatch.setenv("NPBERT_NUM_THREADS", n_threads)
    for n in (0, 1, 5, 64, 1000):
        for cost in (None, np.arange(n, dtype=float) ** 2):
            counts = np.zeros(n, np.int64)
            parallel_for(_count, n, counts, cost=cost)
            assert (counts == 1).all()


@SETTINGS
@given(cost=st.lists(st.floats(0, 100), min_size=1, max_size=60), parts=st.integers(1, 8))
def test_parts_by_cost_are_contiguous_and_balanced(cost, parts):
    bounds = part_bounds(len(cost), parts, np.array(cost))
    assert bounds[0] == 0 and bounds[-1] == len(cost) and len(bounds) == parts + 1
    assert (np.diff(bounds) >= 0).all()
    sums = [sum(cost[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    assert max(sums) <= sum(cost) / parts + max(cost) + 1e-9          # off an even share by one item at most
    assert list(part_bounds(10, 3)) == [0, 3, 6, 10]


@njit(nogil=True, cache=True)
def _count_twice(lo, hi, counts):
    for i in range(lo, hi):
        counts[i] += 2


def test_one_parallel_driver_runs_every_kernel_with_the_same_argument_types(monkeypatch):
    # the driver calls a kernel through its compiled code's address, so it is compiled per argument
    # types, not per kernel (Numba compiled each kernel's code again into a driver that named it)
    monkeypatch.setenv("NPBERT_NUM_THREADS", "2")
    counts = np.zeros(1000, np.int64)
    parallel_for(_count, 1000, counts)
    parallel_for(_count_twice, 1000, counts)
    assert (counts == 3).all()
    same_types = [s for s in threads._parallel_calls.signatures if s[2].types == (numba.typeof(counts),)]
    assert len(same_types) == 1


def test_thread_count_is_capped_by_numbas(monkeypatch):
    monkeypatch.setenv("NPBERT_NUM_THREADS", "1000")
    assert threads.num_threads() == numba.config.NUMBA_NUM_THREADS
    monkeypatch.setenv("NPBERT_NUM_THREADS", "1")
    assert threads.num_threads() == 1


def test_a_forked_child_runs_the_kernels_on_one_thread(monkeypatch):
    # GNU OpenMP does not survive fork(): after a parallel loop in the parent, a forked child
    # (multiprocessing's default start method on Linux before Python 3.14) must still compute
    import multiprocessing
    monkeypatch.setenv("NPBERT_NUM_THREADS", "2")
    x = normal(0, (4096, 64), np.float32)
    counts = np.zeros(1000, np.int64)
    parallel_for(_count, 1000, counts)                                 # the parent starts OpenMP's threads
    want = kernels.layernorm_forward(x, np.ones(64, np.float32), np.zeros(64, np.float32), 1e-12)[0]
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(_layernorm_in_child, (x,)).get(timeout=HANG_SECONDS)
    np.testing.assert_array_equal(got, want)                           # LayerNorm: the same bits on any thread count


def _layernorm_in_child(x):
    assert threads.num_threads() == 1 or not threads._ran_parallel
    return kernels.layernorm_forward(x, np.ones(64, np.float32), np.zeros(64, np.float32), 1e-12)[0]
