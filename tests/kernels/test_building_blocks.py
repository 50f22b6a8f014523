"""The pieces the numba kernels are built from, held to NumPy and to exact sums: fast_exp, the
row reductions (argmax, sums, dots), the float64-accurate sum of squares and the memory offset
search; and what must not depend on the thread count."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numba import njit

from npbert import kernels, ops
from npbert.kernels.fastexp import fast_exp
from npbert.kernels.rowops import row_max
from support.kernel_checks import DTYPES, SETTINGS, normal


# --- building blocks ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_fast_exp_matches_numpy(dtype):
    from numba import njit

    @njit
    def run(x, y):
        for i in range(x.size):
            y[i] = fast_exp(x[i])

    x = np.concatenate([np.linspace(-120.0, 0.0, 200001), [-1e30, -np.inf, -1e-30, 0.0]]).astype(dtype)
    y = np.empty_like(x)
    run(x, y)
    want = np.exp(x.astype(np.float64))
    rel = np.abs(y - want) / np.maximum(want, np.finfo(dtype).tiny)
    tiny = want < np.finfo(dtype).tiny                 # subnormal results: absolute error only
    assert rel[~tiny].max() < (3e-16 if dtype == np.float64 else 2e-7)
    assert np.abs(y[tiny] - want[tiny]).max() < np.finfo(dtype).tiny


def test_a_loop_calling_fast_exp_keeps_the_stores_after_it():
    # numba 0.68 lost the store after the loop when fast_exp's overload was inlined at IR level
    # (inline="always") and the row views came from one tuple assignment: fastexp.by_width
    from numba import njit

    @njit
    def run(logits, safe, row_max, lse, g, out):
        for i in range(logits.shape[0]):
            x, d, m, s, gi = logits[i], out[i], row_max[i], lse[i], g[i]
            for j in range(x.size):
                d[j] = fast_exp((x[j] - m) - s) * gi
            d[safe[i]] = -7.0

    out = np.zeros((2, 3))
    run(np.zeros((2, 3)), np.array([1, 2]), np.zeros(2), np.zeros(2), np.ones(2), out)
    np.testing.assert_array_equal(out, [[1.0, -7.0, 1.0], [1.0, 1.0, -7.0]])


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(n=st.integers(1, 50), levels=st.integers(1, 4), seed=st.integers(0, 999))
def test_row_argmax_is_the_first_maximum_like_numpy(dtype, n, levels, seed):
    from numba import njit

    from npbert.kernels.rowops import index_lanes, lanes_like, row_argmax

    @njit
    def run(x):
        return row_argmax(x, lanes_like(x), index_lanes())

    x = np.random.default_rng(seed).integers(0, levels, n).astype(dtype)  # few levels: many ties, across lanes
    x[np.random.default_rng(seed + 1).random(n) < 0.2] = -np.inf
    m, k = run(x)
    assert (m, k) == (x.max(), int(np.argmax(x)))
    from numba.np.numpy_support import from_dtype
    assert run.nopython_signatures[0].return_type[0] == from_dtype(dtype)  # x - m stays in the row's dtype


@njit
def _row_max(x):
    return row_max(x)


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(values=st.lists(st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e-40, -1e-40, np.inf, -np.inf, np.nan, -np.nan]),
                       max_size=70))
def test_row_max_over_the_floats_bits_is_np_max(dtype, values):
    # an integer max over keys made from the bits: np.max's value (== for signed zeros, NaN for a NaN of
    # either sign), subnormals and infinities included, in the row's dtype; -inf for an empty row
    x = np.array(values, dtype)
    got = _row_max(x)
    want = x.max() if x.size else -np.inf
    assert (np.isnan(got) and np.isnan(want)) or got == want
    from numba.np.numpy_support import from_dtype
    signature = next(s for s in _row_max.nopython_signatures if s.args[0].dtype == from_dtype(dtype))
    assert signature.return_type == from_dtype(dtype)                         # x - m stays in the row's dtype


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(n=st.integers(0, 300), scale=st.sampled_from([1e-3, 1.0, 1e4]), seed=st.integers(0, 999))
def test_row_sum_and_dot_under_reassoc_are_float64_accurate(dtype, n, scale, seed):
    # fastmath={"reassoc"} on these two only reorders float64 adds: the result must stay within a
    # few float64 ulps of the exactly rounded sum, whatever the order LLVM picked
    import math

    from npbert.kernels.rowops import row_dot, row_sum

    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(n) * scale).astype(dtype), rng.standard_normal(n).astype(dtype)
    x64 = x.astype(np.float64)
    bound = n * 2.3e-16 * max(math.fsum(np.abs(x64)), 1e-300)
    assert abs(row_sum(x) - math.fsum(x64)) <= bound
    xy = (x * y).astype(np.float64)                            # products in the row's dtype, as the kernel
    assert abs(row_dot(x, y) - math.fsum(xy)) <= n * 2.3e-16 * max(math.fsum(np.abs(xy)), 1e-300)
    assert row_sum(x) == row_sum(x.copy())                     # the same order every call


def test_row_sum_keeps_nan_and_inf():
    from npbert.kernels.rowops import row_sum
    assert np.isnan(row_sum(np.array([1.0, np.nan, 2.0], np.float32)))
    assert row_sum(np.array([1.0, np.inf, 2.0])) == np.inf


def test_layernorm_gradients_do_not_depend_on_the_thread_count(monkeypatch):
    for threads in ("1", "2", "3", "7"):
        monkeypatch.setenv("NPBERT_NUM_THREADS", threads)
        x = normal(0, (300, 16), np.float64)           # row-chunked sums do not depend on threads
        _, c = kernels.layernorm_forward(x, np.ones(16), np.zeros(16), 1e-12)
        grads = kernels.layernorm_backward(x, c)
        if threads == "1":
            first = grads
        for g, f in zip(grads, first):
            np.testing.assert_array_equal(g, f)


@SETTINGS
@given(base=st.integers(0, 2**20), offsets=st.lists(st.integers(0, 8191), max_size=5))
def test_empty_apart_offset_is_farthest_from_every_input(base, offsets):
    # the vectorised search returns what its definition gives, by brute force over the candidates
    from npbert.kernels.memory import PAGE, STEP, _best_offset

    buf = np.empty(3 * PAGE, np.uint8)
    inputs = [buf[k:k + 8] for k in offsets] + [np.empty(0), "not an array"]   # the last two: ignored
    addrs = [x.ctypes.data % PAGE for x in inputs[:len(offsets)]]

    def distance(off):
        start = (base + off) % PAGE
        return min((min((start - a) % PAGE, (a - start) % PAGE) for a in addrs), default=0)
    assert _best_offset(base, inputs) == max(range(0, PAGE, STEP), key=distance)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 1000, 65536, 200_003])           # across the 65,536-element chunks
def test_sum_of_squares_is_float64_accurate_for_any_thread_count(monkeypatch, dtype, n):
    import math
    x = normal(n, (n,), dtype, 3.0)
    exact_sum = math.fsum((x.astype(np.float64) ** 2).tolist())
    results = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("NPBERT_NUM_THREADS", threads)
        results.append(kernels.sum_of_squares(x.reshape(-1, 1) if n % 2 else x))
    assert results[0] == results[1] == results[2]                    # chunks, not threads, fix the order
    assert abs(results[0] - exact_sum) <= 1e-15 * n * max(exact_sum, 1e-300)
    assert abs(ops.sum_of_squares(x) - exact_sum) <= (1e-12 if dtype == np.float64 else 1e-5) * max(exact_sum, 1e-300)


# --- the threads between loops ------------------------------------------------------------------------

@pytest.mark.parametrize("set_by_user", [None, "", "ACTIVE"])
def test_the_worker_sleeps_between_loops_unless_the_environment_says_otherwise(set_by_user):
    """GNU OpenMP as Numba starts it reads OMP_WAIT_POLICY once: npbert's PASSIVE (a spinning
    worker takes a busy machine's cores, benchmarks/busy_threads.py) unless the user set one.
    Read back from the OpenMP runtime itself: OMP_DISPLAY_ENV=VERBOSE prints the spin count it
    took (0 for PASSIVE, 300,000 unset; its OMP_WAIT_POLICY line says PASSIVE for both)."""
    import os
    import subprocess
    import sys
    from support.hostile import env
    from support.patience import HANG_SECONDS
    code = ("import numba; from npbert.kernels import threads; threads.numba_threads(); "
            "print(numba.threading_layer())")
    environment = {k: v for k, v in env(OMP_DISPLAY_ENV="VERBOSE", NPBERT_NUM_THREADS="2").items()
                   if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "NUMBA_THREADING_LAYER")}
    if set_by_user is not None:                     # "": empty counts as unset, as npbert's own variables
        environment["OMP_WAIT_POLICY"] = set_by_user
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                           timeout=HANG_SECONDS)
    assert child.returncode == 0, child.stderr
    if child.stdout.strip() != "omp":
        pytest.skip(f"Numba runs its threads on {child.stdout.strip()!r} here, not OpenMP")
    spins = "30000000000" if set_by_user == "ACTIVE" else "0"
    assert f"GOMP_SPINCOUNT = '{spins}'" in child.stderr
