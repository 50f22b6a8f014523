"""The numba backend held to the NumPy reference: every kernel on hypothesis-drawn shapes,
masks and dropout (same Generator seed, so the same elements are dropped), in float64 to
1e-12 and float32 to 1e-5 (max |got - want| relative to max |want|: elementwise relative
error means nothing for entries that cancel to ~0). The whole pretraining step through the kernels
is tests/kernels/test_whole_model.py; the switch between backends, tests/kernels/test_backend_switch.py; the
pieces kernels are built from, tests/kernels/test_building_blocks.py.

A float32 kernel is compared with the reference run in float64 on the same float32 inputs,
i.e. with the exact answer: the float32 reference itself can be off by more than 1e-5 where
float32 cancels (e.g. p - 1 for a softmax probability next to 1). Where a kernel's output is
itself a sum of terms that cancel (the attention core's dq, dk when a softmax saturates), the
tolerance is relative to the size of those terms, since that is what float32 rounding scales
with."""
import contextlib
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from npbert import backend, kernels, ops
from npbert.ops import merge_heads, split_heads
from support.kernel_checks import DTYPES, SETTINGS, TOL, assert_all_close, assert_close, exact, normal


# --- elementwise and row-wise kernels --------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), bias=st.booleans(), out=st.integers(1, 9),
       seed=st.integers(0, 999))
def test_linear(dtype, shape, bias, out, seed):
    # the kernel's matmuls are BLAS's gemm on parts of the rows (tests/kernels/test_matmul.py splits them
    # for any thread count); here the layer against exact float64
    x, w = normal(seed, shape, dtype), normal(seed + 1, (out, shape[-1]), dtype)
    b = normal(seed + 2, out, dtype) if bias else None
    dy = normal(seed + 3, (*shape[:-1], out), dtype)
    y_ref, c_ref = ops.linear_forward(exact(x), exact(w), exact(b))
    y, c = kernels.linear_forward(x, w, b)
    assert_close(y, y_ref, dtype, "y")
    assert_all_close(kernels.linear_backward(dy, c), ops.linear_backward(exact(dy), c_ref), dtype, "dx, dw, db")


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(rows=st.lists(st.integers(1, 70), min_size=0, max_size=2), H=st.integers(3, 40), seed=st.integers(0, 999))
def test_layernorm(dtype, rows, H, seed):
    # H <= 2 is degenerate (xhat is +-1 whatever x is, so dx is 0 up to rounding noise): H >= 3
    x = normal(seed, (*rows, H), dtype, 3.0) + dtype(1.5)
    gamma, beta, dy = normal(seed + 1, H, dtype), normal(seed + 2, H, dtype), normal(seed + 3, x.shape, dtype)
    y_ref, c_ref = ops.layernorm_forward(exact(x), exact(gamma), exact(beta), 1e-12)
    y, c = kernels.layernorm_forward(x, gamma, beta, 1e-12)
    assert_close(y, y_ref, dtype, "y")
    assert_all_close(kernels.layernorm_backward(dy, c), ops.layernorm_backward(exact(dy), c_ref), dtype, "dx, dgamma, dbeta")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["gelu", "gelu_new"])
@SETTINGS
@given(shape=st.lists(st.integers(1, 40), min_size=1, max_size=3), seed=st.integers(0, 999))
def test_gelu(dtype, act, shape, seed):
    x, dy = normal(seed, shape, dtype, 4.0), normal(seed + 1, shape, dtype)
    y_ref, c_ref = ops.gelu_forward(exact(x), act)
    y, c = kernels.gelu_forward(x, act)
    # floor 1: gelu(-6.6) = 0.5 x (1 + tanh(..)) ~ 1e-13 is all cancellation, in the reference too
    assert_close(y, y_ref, dtype, "y", floor=1.0)
    assert_close(kernels.gelu_backward(dy, c), ops.gelu_backward(exact(dy), c_ref), dtype, "dx", floor=1.0)


def edge_values(dtype):
    """Every kind of float an elementwise kernel can meet: zeros, subnormals, the range near 0
    where GELU's terms cancel, where exp underflows, huge values whose squares overflow (float32
    from 1.8e19, float64 from 1.3e154), float32's and the dtype's largest, the infinities and NaN,
    with both signs."""
    info = np.finfo(dtype)
    mags = np.concatenate([[0.0, info.smallest_subnormal, info.tiny, 1e-30, 1e-7], np.linspace(0.01, 12.0, 600),
                           [13.4, 30.0, 87.0, 89.0, 200.0, 1e4, 1e19, 2e19, 1e30, 1e155,
                            float(np.finfo(np.float32).max), float(info.max), np.inf]])
    with np.errstate(over="ignore"):                   # float64's largest and 1e155 are inf in float32
        return np.concatenate([mags, -mags, [np.nan]]).astype(dtype)


def assert_like_reference(got, want, dtype, what, floor=1.0, per_element=False):
    """NaN and infinities exactly where the reference (rounded to dtype) has them, and close elsewhere
    (per_element: each value against its own size, floor 1, so that huge values do not hide an
    error at small ones; for elementwise ops)."""
    with np.errstate(over="ignore"):
        want = want.astype(dtype)                      # float64 values beyond float32's range round to inf
    for kind in (np.isnan, np.isposinf, np.isneginf):
        assert np.array_equal(kind(got), kind(want)), (what, kind.__name__, got[kind(got) != kind(want)])
    finite = np.isfinite(want)
    if not per_element:
        assert_close(got[finite], want[finite], dtype, what, floor=floor)
        return
    got, want = got[finite].astype(np.float64), want[finite].astype(np.float64)
    err = np.abs(got - want) / np.maximum(np.abs(want), floor)
    assert err.max(initial=0.0) <= TOL[dtype], (what, want[err.argmax()], got[err.argmax()], err.max())


def test_the_fma_flag_is_on_exactly_the_kernels_the_edge_tests_cover():
    from npbert.kernels import attention_core, cross_entropy, gelu
    from npbert.kernels.fastexp import FMA

    for f in (gelu.forward_pass, gelu.backward_pass, cross_entropy._forward, cross_entropy._backward,
              attention_core.softmax_row):
        assert f.targetoptions["fastmath"] == FMA == {"contract"}, f


# docs/design.md: fast-math broke llm.c's GELU backward (NaNs); use it only where a test proves it
# safe. The kernels above carry fastmath={"contract"} alone (fastexp.FMA: multiply-adds may fuse;
# no finite-math or reassociation assumptions): over every kind of input they must produce NaN
# and inf exactly where the float64 reference does, and its values elsewhere.

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["gelu", "gelu_new"])
def test_gelu_kernels_compiled_with_fma_are_safe_at_the_edges(dtype, act):
    # Three ways, forward and backward: the reference run in float64 (the exact answer), the
    # reference run in dtype (the source of truth must be at least as right as its kernel: it
    # gave NaN for float32 tanh-GELU's backward at |x| >= 1.8e19, where the kernel did not) and
    # the kernel, which must also agree with the reference of its own dtype.
    x = edge_values(dtype)
    ones = np.ones_like(x)
    with np.errstate(all="ignore"):                    # the reference's own x * x overflows and inf * 0 at +-inf
        y_exact, c_exact = ops.gelu_forward(exact(x), act)
        dx_exact = ops.gelu_backward(exact(ones), c_exact)
        y_ref, c_ref = ops.gelu_forward(x, act)
        dx_ref = ops.gelu_backward(ones, c_ref)
    y, c = kernels.gelu_forward(x, act)
    dx = kernels.gelu_backward(ones, c)
    for what, got, want in (("reference gelu", y_ref, y_exact), ("reference dgelu", dx_ref, dx_exact),
                            ("kernel gelu", y, y_exact), ("kernel dgelu", dx, dx_exact),
                            ("kernel gelu vs reference", y, y_ref), ("kernel dgelu vs reference", dx, dx_ref)):
        assert_like_reference(got, want, dtype, what, per_element=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_and_softmax_compiled_with_fma_are_safe_at_the_edges(dtype):
    from npbert.kernels import attention_core

    x = edge_values(dtype)
    logits = np.clip(np.where(np.isnan(x), 0.0, x), -1e30, 1e30)     # beyond, the float64 reference overflows
    rows = np.stack([logits, logits[::-1]]).astype(dtype)             # (2, n)
    labels = np.array([0, len(x) - 2])
    loss_ref, ce_ref = ops.cross_entropy_forward(exact(rows), labels)
    loss, ce = kernels.cross_entropy_forward(rows, labels)
    assert_like_reference(np.array([loss]), np.array([loss_ref]), dtype, "cross-entropy")
    assert_like_reference(kernels.cross_entropy_backward(1.0, ce), ops.cross_entropy_backward(1.0, ce_ref),
                          dtype, "dlogits")

    scores = np.clip(x[np.isfinite(x)], -1e30, 1e30).astype(dtype)                      # (n,)
    bias = np.where(np.arange(scores.size) % 7 == 0, np.finfo(dtype).min, 0.0).astype(dtype)   # masked keys
    s = scores.copy()
    attention_core.softmax_row(s, bias, dtype(0.125))
    z = exact(scores) * 0.125 + exact(bias)
    want = np.exp(z - z.max())
    assert_like_reference(s, want / want.sum(), dtype, "softmax", floor=0.0)


def test_gelu_rejects_an_unknown_activation():
    with pytest.raises(ValueError, match="hidden_act"):
        kernels.gelu_forward(np.zeros(3), "relu")


# --- fused bias + GELU ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["gelu", "gelu_new"])
@SETTINGS
@given(rows=st.lists(st.integers(0, 70), min_size=1, max_size=2), n_in=st.integers(1, 9), out=st.integers(1, 40),
       seed=st.integers(0, 999))
def test_linear_gelu(dtype, act, rows, n_in, out, seed):
    # x 2-D or 3-D, 0 rows too; a side of 65..70 crosses db's 64-row chunks
    x, w = normal(seed, (*rows, n_in), dtype, 2.0), normal(seed + 1, (out, n_in), dtype)
    b, dy = normal(seed + 2, out, dtype), normal(seed + 3, (*rows, out), dtype)
    y_ref, c_ref = ops.linear_gelu_forward(exact(x), exact(w), exact(b), act)
    y, c = kernels.linear_gelu_forward(x, w, b, act)
    assert_close(y, y_ref, dtype, "y", floor=1.0)     # floor 1: GELU's cancellation, as in test_gelu
    assert_all_close(kernels.linear_gelu_backward(dy, c), ops.linear_gelu_backward(exact(dy), c_ref), dtype,
                     "dx, dw, db")


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_gelu_passes_do_not_depend_on_the_thread_count(monkeypatch, dtype):
    # 1000 rows: 16 chunks of db, and the GELU passes are split too (70 columns: 234 rows a part
    # at least). The matmuls are split by thread too and BLAS blocks a part's rows its own way,
    # so they are NumPy's here: what is checked is the kernel's own work (GELU, bias, db).
    from npbert.kernels import linear as linear_kernel
    monkeypatch.setattr(linear_kernel, "matmul", lambda a, b, bias=None: np.matmul(a, b) + (0 if bias is None else bias))
    x, w = normal(0, (1000, 16), dtype), normal(1, (70, 16), dtype)
    b, dy = normal(2, 70, dtype), normal(3, (1000, 70), dtype)
    results = []
    for threads in ("1", "3"):
        monkeypatch.setenv("NPBERT_NUM_THREADS", threads)
        y, c = kernels.linear_gelu_forward(x, w, b, "gelu")
        results.append((y, *kernels.linear_gelu_backward(dy, c)))
    for name, got, first in zip(("y", "dx", "dw", "db"), results[1], results[0]):
        np.testing.assert_array_equal(got, first, err_msg=name)
    with pytest.raises(ValueError, match="hidden_act"):
        kernels.linear_gelu_forward(x, w, b, "relu")


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(shape=st.lists(st.integers(1, 50), min_size=1, max_size=3), p=st.sampled_from([0.0, 0.1, 0.5, 0.9]),
       train=st.booleans(), seed=st.integers(0, 999))
def test_dropout_drops_the_same_elements_as_the_reference(dtype, shape, p, train, seed):
    x, dy = normal(seed, shape, dtype), normal(seed + 1, shape, dtype)
    rng_ref, rng = (np.random.default_rng(seed) if train else None for _ in range(2))
    y_ref, m_ref = ops.dropout_forward(x, p, rng_ref)
    y, m = kernels.dropout_forward(x, p, rng)
    np.testing.assert_array_equal(y, y_ref)            # exactly: same uniforms, same products
    np.testing.assert_array_equal(kernels.dropout_backward(dy, m), ops.dropout_backward(dy, m_ref))
    if train:                                          # and the Generators are left in the same state
        assert rng.random() == rng_ref.random()


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(N=st.integers(0, 12), C=st.integers(1, 60), ignored=st.floats(0.0, 1.0), seed=st.integers(0, 999),
       spread=st.sampled_from([1.0, 30.0]))
def test_cross_entropy(dtype, N, C, ignored, seed, spread):
    rng = np.random.default_rng(seed)
    logits = normal(seed, (N, C), dtype, spread)
    labels = np.where(rng.random(N) < ignored, ops.IGNORE_INDEX, rng.integers(0, C, N))
    loss_ref, c_ref = ops.cross_entropy_forward(exact(logits), labels)
    loss, c = kernels.cross_entropy_forward(logits, labels)
    assert type(loss) is dtype
    assert abs(loss - loss_ref) <= TOL[dtype] * max(abs(loss_ref), 1.0)  # nats: a float32 loss of 1e-7 is noise
    assert_close(kernels.cross_entropy_backward(0.7, c), ops.cross_entropy_backward(0.7, c_ref), dtype, "dlogits")


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(V=st.integers(1, 20), shape=st.lists(st.integers(1, 12), min_size=1, max_size=2), H=st.integers(1, 9),
       seed=st.integers(0, 999), pad=st.one_of(st.none(), st.integers(0, 19)))
def test_embedding_scatter_add_accumulates_repeated_ids(dtype, V, shape, H, seed, pad):
    ids = np.random.default_rng(seed).integers(0, V, shape)   # small V: many repeats
    pad = None if pad is None else pad % V
    table, dout = normal(seed, (V, H), dtype), normal(seed + 1, (*shape, H), dtype)
    out_ref, c_ref = ops.embedding_forward(ids, table, pad)
    out, c = kernels.embedding_forward(ids, table, pad)
    # exactly: one gather, and the scatter-add adds the same rows in np.add.at's order
    np.testing.assert_array_equal(out, out_ref)
    dtable = kernels.embedding_backward(dout, c)
    np.testing.assert_array_equal(dtable, ops.embedding_backward(dout, c_ref))
    if pad is not None:                                     # padding_idx: that row gets nothing from the lookup
        assert not dtable[pad].any()


# --- the attention core ----------------------------------------------------------------------------

@st.composite
def attention_problem(draw):
    B, A, T, D = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 9)), draw(st.integers(1, 8))
    keep = np.array(draw(st.lists(st.lists(st.booleans(), min_size=T, max_size=T), min_size=B, max_size=B)))
    keep[np.arange(B), draw(st.lists(st.integers(0, T - 1), min_size=B, max_size=B))] = True  # >= 1 key per row
    return B, A, T, D, keep, draw(st.sampled_from([0.0, 0.3])), draw(st.booleans()), draw(st.integers(0, 999))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gemm_path", [True, False], ids=["gemm", "numpy-matmul"])
@SETTINGS
@given(problem=attention_problem())
def test_attention_core(dtype, gemm_path, problem):
    # gemm: each (batch, head) done start to end in one thread, matmuls through kernels/gemm.py;
    # numpy-matmul: the path without OpenBLAS (NumPy's batched matmuls around the row passes)
    B, A, T, D, keep, p_drop, train, seed = problem
    # q, k, v as the model makes them: (B, A, T, D) views of (B, T, H) projections
    q, k, v, dctx = (split_heads(normal(seed + i, (B, T, A * D), dtype, 2.0), A) for i in range(4))
    mask_bias = ops.attention_mask_bias(keep, dtype)
    rng_ref, rng = (np.random.default_rng(seed) if train else None for _ in range(2))
    ctx_ref, c_ref = ops.attention_core_forward(*map(exact, (q, k, v, mask_bias)), p_drop, rng_ref)
    no_gemm = mock.patch("npbert.kernels.attention_core._gemm_address", lambda *arrays: 0)
    with contextlib.nullcontext() if gemm_path else no_gemm:
        ctx, c = kernels.attention_core_forward(q, k, v, mask_bias, p_drop, rng)
        grads = kernels.attention_core_backward(dctx, c)
    scales = attention_term_sizes(*map(exact, (q, k, v, dctx, mask_bias)), p_drop if train else 0.0)
    assert_close(ctx, ctx_ref, dtype, "context", floor=scales[0])
    grads_ref = ops.attention_core_backward(exact(dctx), c_ref)
    for name, got, want, floor in zip(("dq", "dk", "dv"), grads, grads_ref, scales[1:]):
        assert_close(got, want, dtype, name, floor=floor)
    if train:
        assert rng.random() == rng_ref.random()


def attention_term_sizes(q, k, v, dctx, mask_bias, p_drop):
    """Largest sum of |terms| behind context, dq, dk, dv (float64): float32 rounding error
    scales with these, not with the results, which cancel to ~0 where a softmax saturates
    (then p (g - sum p g) is a difference of nearly equal numbers)."""
    c = 1.0 / (1.0 - p_drop)                           # the dropout scale bounds a kept weight
    probs, _ = ops.softmax_forward(q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1]) + mask_bias[:, None, None, :])
    g = c * (np.abs(dctx) @ np.abs(v).swapaxes(-1, -2))                  # |d probs|, (B, A, T, T)
    dscores = probs * (g + (probs * g).sum(-1, keepdims=True)) / np.sqrt(q.shape[-1])
    return [float(x.max(initial=0.0)) for x in (c * probs @ np.abs(v), dscores @ np.abs(k),
                                                 dscores.swapaxes(-1, -2) @ np.abs(q),
                                                 c * probs.swapaxes(-1, -2) @ np.abs(dctx))]


def test_attention_core_on_contiguous_inputs_and_context_merges_without_copy():
    q, k, v, dctx = (normal(i, (2, 3, 5, 4), np.float64) for i in range(4))
    mask_bias = ops.attention_mask_bias(np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]), np.float64)
    ctx_ref, c_ref = ops.attention_core_forward(q, k, v, mask_bias, 0.2, np.random.default_rng(3))
    ctx, c = kernels.attention_core_forward(q, k, v, mask_bias, 0.2, np.random.default_rng(3))
    assert_close(ctx, ctx_ref, np.float64, "context")
    assert_all_close(kernels.attention_core_backward(dctx, c), ops.attention_core_backward(dctx, c_ref),
                     np.float64, "dq, dk, dv")
    assert np.shares_memory(merge_heads(ctx), ctx)      # (B, T, A, D) storage: merge_heads is a reshape


# --- the optimizer update --------------------------------------------------------------------------

def _adamw_state(seed, shape, dtype):
    p, m = normal(seed, shape, dtype), normal(seed + 1, shape, dtype, 0.01)
    return p, m, np.square(normal(seed + 2, shape, dtype, 0.01))    # v >= 0, as a second moment is


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(shape=st.lists(st.integers(1, 40), min_size=1, max_size=3), steps=st.integers(1, 3),
       lr=st.floats(1e-6, 1e-1), weight_decay=st.sampled_from([0.0, 0.01]), bias_correction=st.booleans(),
       g_scale=st.sampled_from([1e-9, 1.0, 1e3]), seed=st.integers(0, 999))
def test_adamw_update_is_bit_identical_to_the_reference(dtype, shape, steps, lr, weight_decay, bias_correction,
                                                        g_scale, seed):
    # the same roundings in the same order and no fastmath (so no FMA contraction): equal to the bit.
    # g_scale 1e-9: sqrt(v) far below eps, the update is ~ m / eps
    ref, got = _adamw_state(seed, shape, dtype), _adamw_state(seed, shape, dtype)
    for t in range(1, steps + 1):
        g = normal(seed + 2 + t, shape, dtype, g_scale)
        c1, c2 = (1.0 - 0.9 ** t, 1.0 - 0.999 ** t) if bias_correction else (1.0, 1.0)
        ops.adamw_update(ref[0], g, ref[1], ref[2], lr, 0.9, 0.999, 1e-6, c1, c2, weight_decay)
        kernels.adamw_update(got[0], g, got[1], got[2], lr, 0.9, 0.999, 1e-6, c1, c2, weight_decay)
    for name, a, b in zip("pmv", got, ref):
        assert a.dtype == dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.parametrize("dtype", DTYPES)
def test_adamw_step_is_the_same_under_both_backends(dtype):
    # through AdamW.step and the switch: decayed and undecayed tensors, one above the threads' grain
    from npbert.optim import AdamW

    shapes = {"a.weight": (300, 70), "a.bias": (70,), "a.LayerNorm.weight": (70,)}
    params = {b: {k: normal(i, s, dtype) for i, (k, s) in enumerate(shapes.items())} for b in ("numpy", "numba")}
    opts = {b: AdamW(params[b], weight_decay=0.01) for b in params}
    for t in range(3):
        grads = {k: normal(10 + 3 * t + i, s, dtype) for i, (k, s) in enumerate(shapes.items())}
        for b in params:
            with backend.use_backend(b):
                opts[b].step(params[b], grads, lr=1e-3 * (t + 1))
    for k in shapes:
        for got, want in ((params["numba"], params["numpy"]), (opts["numba"].m, opts["numpy"].m),
                          (opts["numba"].v, opts["numpy"].v)):
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)   # exactly: see the test above


def test_adamw_update_refuses_arrays_it_cannot_update_in_place():
    # reshape(-1) of a strided view is a copy: the update would be lost, so it must not run
    p, m, v, strided = np.zeros((4, 3)), np.zeros((4, 3)), np.zeros((4, 3)), np.zeros((4, 6))[:, ::2]
    hyper = (1e-3, 0.9, 0.999, 1e-6, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="m must be C-contiguous"):
        kernels.adamw_update(p, p, strided, v, *hyper)
    with pytest.raises(ValueError, match="p must be C-contiguous"):
        kernels.adamw_update(p.T, p.T, m.T, v.T, *hyper)
    with pytest.raises(ValueError, match="g is float32"):
        kernels.adamw_update(p, p.astype(np.float32), m, v, *hyper)
    kernels.adamw_update(p, strided, m, v, *hyper)    # a strided g is only read: allowed


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
def test_layernorm_backward_does_not_read_the_callers_x(backend_name):
    """The cache keeps xhat, not a reference to x: a caller that reuses x's memory between the
    forward and the backward (as an in-place residual add would) still gets the right gradients.
    The Numba LayerNorm used to keep x and recompute xhat from it."""
    x = normal(0, (6, 16), np.float32)
    gamma, beta, dy = normal(1, (16,), np.float32), normal(2, (16,), np.float32), normal(3, (6, 16), np.float32)
    with backend.use_backend(backend_name):
        _, cache = backend.layernorm_forward(x.copy(), gamma, beta, 1e-12)
        want = backend.layernorm_backward(dy, cache)
        _, cache = backend.layernorm_forward(x, gamma, beta, 1e-12)
        x[:] = 1e6                                       # the caller writes over its array
        got = backend.layernorm_backward(dy, cache)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
