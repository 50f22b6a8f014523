"""The MLM decoder and its cross-entropy fused (npbert/ops/decoder_cross_entropy.py, the reference,
and npbert/kernels/decoder_cross_entropy.py) against the unfused pair they replace: linear_forward
then cross_entropy_forward, and their backwards, on whole (M, V) logits. For random shapes, row
blocks and column chunks small enough that every path splits (and the kernel's tiles end part
way), ignored rows, no rows, every row ignored, 1 and 2 threads: the same loss, dt, dW, db and
predictions, float64 within 1e-12 of each quantity's scale, float32 within 2e-6 of it against the
float64 answer. log p at targets and the top k against the whole logits likewise. The
finite-difference checks are the gradcheck's decoder_cross_entropy and mlm_loss rows."""
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npbert import kernels, ops
from npbert.ops import IGNORE_INDEX

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = {np.float64: 1e-12, np.float32: 2e-6}


@st.composite
def problems(draw):
    M, H, V = draw(st.integers(0, 40)), draw(st.integers(1, 9)), draw(st.integers(1, 70))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    t, w, b = rng.standard_normal((M, H)), rng.standard_normal((V, H)), rng.standard_normal(V)
    labels = rng.integers(0, V, M)
    labels[rng.random(M) < draw(st.sampled_from([0.0, 0.3, 1.0]))] = IGNORE_INDEX   # none, some or all ignored
    return t, w, b, labels, draw(st.integers(1, 9)), draw(st.integers(1, 17))        # ..., block rows, chunk


def unfused(t, w, b, labels):
    """(loss, dt, dw, db, predictions) of the whole logits, the reference ops' way, float64."""
    logits, decoder = ops.linear_forward(t, w, b)                                    # (M, V)
    loss, ce = ops.cross_entropy_forward(logits, labels)
    dt, dw, db = ops.linear_backward(ops.cross_entropy_backward(1.0, ce), decoder)
    return loss, dt, dw, db, logits


def scaled(got, want):
    return np.abs(np.asarray(got, np.float64) - want).max(initial=0.0) / max(np.abs(want).max(initial=0.0), 1.0)


def fused(impl, t, w, b, labels, dloss=1.0):
    loss, cache = impl.decoder_cross_entropy_forward(t, w, b, labels)
    return (loss, *impl.decoder_cross_entropy_backward(dloss, cache)), cache


def blocks(rows, chunk):
    return (mock.patch("npbert.ops.decoder_cross_entropy.BLOCK_ROWS", rows),
            mock.patch("npbert.kernels.decoder_cross_entropy.CHUNK", chunk))


def clear_predictions(logits):
    """Rows whose best logit beats the second by more than rounding: their argmax is a verdict."""
    if logits.shape[1] < 2:
        return np.ones(len(logits), bool)
    top2 = np.sort(logits, axis=1)[:, -2:]
    return top2[:, 1] - top2[:, 0] > 1e-9 * max(np.abs(logits).max(initial=0.0), 1.0)


@pytest.mark.parametrize("impl", [ops, kernels], ids=["reference", "kernel"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("threads", ["1", "2"])
@SETTINGS
@given(problem=problems())
def test_fused_is_the_unfused_pair(impl, dtype, threads, problem):
    t, w, b, labels, rows, chunk = problem
    want = unfused(t, w, b, labels)
    p, q = blocks(rows, chunk)
    with p, q, mock.patch.dict("os.environ", {"NPBERT_NUM_THREADS": threads}):
        got, cache = fused(impl, *(x.astype(dtype) for x in (t, w, b)), labels)
        again, _ = fused(impl, *(x.astype(dtype) for x in (t, w, b)), labels, dloss=0.5)
    for g, x in zip(got, want[:4]):
        assert np.asarray(g).dtype == dtype and np.shape(g) == np.shape(x)
        assert scaled(g, x) <= TOL[dtype]
    for g, h in zip(got[1:], again[1:]):                                   # linear in dloss
        np.testing.assert_array_equal(g * dtype(0.5), h)
    clear = clear_predictions(want[4])
    assert (cache.predictions[clear] == want[4].argmax(axis=1)[clear]).all()


@pytest.mark.parametrize("impl", [ops, kernels], ids=["reference", "kernel"])
def test_without_gradient_nothing_is_kept_and_backward_says_so(impl):
    t, w, b, labels = np.ones((3, 2)), np.ones((5, 2)), np.zeros(5), np.array([1, 2, 3])     # uniform: log 5
    loss, cache = impl.decoder_cross_entropy_forward(t, w, b, labels, grad=False)
    assert cache.dt is None and cache.dw is None and cache.db is None and abs(loss - np.log(5)) < 1e-15
    with pytest.raises(ValueError, match="grad=False"):
        impl.decoder_cross_entropy_backward(1.0, cache)


def test_the_kernel_gives_the_same_bits_on_any_thread_count():
    rng = np.random.default_rng(0)
    t, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((50, 16), (300, 16), (300,)))
    labels = rng.integers(0, 300, 50)
    p, q = blocks(16, 64)
    results = []
    with p, q:
        for threads in ("1", "2", "3"):
            with mock.patch.dict("os.environ", {"NPBERT_NUM_THREADS": threads}):
                results.append(fused(kernels, t, w, b, labels)[0])
    for other in results[1:]:
        for g, h in zip(results[0], other):
            np.testing.assert_array_equal(g, h)


@pytest.mark.parametrize("impl", [ops, kernels], ids=["reference", "kernel"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@SETTINGS
@given(problem=problems())
def test_log_p_at_targets_and_the_top_k_are_the_whole_logits(impl, dtype, problem):
    t, w, b, labels, rows, chunk = problem
    logits = unfused(t, w, b, labels)[4]                                             # (M, V) float64
    log_p = logits - logits.max(axis=1, keepdims=True, initial=-np.inf)
    log_p -= np.log(np.exp(log_p).sum(axis=1, keepdims=True))
    targets = np.where(labels < 0, 0, labels)
    p, q = blocks(rows, chunk)
    with p, q:
        got = impl.decoder_log_softmax_at(*(x.astype(dtype) for x in (t, w, b)), targets)
        ids, top = ops.decoder_top_k(*(x.astype(dtype) for x in (t, w, b)), 3)
    assert got.dtype == np.float64 and got.shape == (len(t),)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    assert np.abs(got - log_p[np.arange(len(t)), targets]).max(initial=0.0) <= tol * max(1.0, np.abs(log_p).max(
        initial=0.0))
    assert ids.shape == top.shape == (len(t), min(3, w.shape[0]))
    assert np.abs(top - np.take_along_axis(log_p, ids, axis=1)).max(initial=0.0) <= tol * max(1.0, np.abs(
        log_p).max(initial=0.0))
    assert (np.diff(top, axis=1) <= 0).all() and (np.take_along_axis(log_p, ids[:, :1], axis=1)[:, 0] >=
                                                  log_p.max(axis=1, initial=-np.inf) - tol * 10).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_the_kernel_predicts_the_first_of_tied_maxima_at_its_own_tile_sizes(dtype, threads):
    # small integers: every logit is exact in either dtype and any summation order, so the rows' maxima
    # tie exactly and often; V 1,100 at the kernel's own CHUNK: two full 512-wide chunks (eight blocks of
    # 64 that first_index tests whole) and a 76-wide one (a block and a 12-wide tail)
    rng = np.random.default_rng(3)
    t, w, b = rng.integers(-1, 2, (60, 4)), rng.integers(-1, 2, (1100, 4)), rng.integers(-1, 2, 1100)
    logits = t @ w.T + b                                                              # (60, 1100) exact
    assert (np.sort(logits, axis=1)[:, -2] == logits.max(axis=1)).mean() > 0.5      # ties are the rule here
    with mock.patch.dict("os.environ", {"NPBERT_NUM_THREADS": threads}):
        _, cache = kernels.decoder_cross_entropy_forward(*(x.astype(dtype) for x in (t, w, b)), rng.integers(0, 1100, 60))
    np.testing.assert_array_equal(cache.predictions, logits.argmax(axis=1))


def test_first_index_finds_the_first_equal_element_or_gives_0():
    from npbert.kernels.decoder_cross_entropy import first_index
    for n in (1, 63, 64, 65, 130, 512):
        x = np.zeros(n, np.float32)
        for j in sorted({0, n // 2, n - 1, min(63, n - 1), min(64, n - 1)}):
            y = x.copy()
            y[j:] = 1.0                                                               # first 1.0 at j
            assert first_index(y, np.float32(1.0)) == j
        assert first_index(x, np.float32(2.0)) == 0 and first_index(x, np.float32("nan")) == 0
