"""Packed attention: the reference (npbert/ops/packed_attention.py) held to the padded attention
core at the real positions (float64, the same dropout key), and the kernel
(npbert/kernels/packed_attention.py) held to the reference, forward, backward and cache, for
random lengths (1-token sequences too), query subsets (every row; a random subset per
sequence, some with no query row), keys at consecutive positions or not, heads, dropout,
dtypes and thread counts. The finite-difference check of the backward is the gradcheck's
`packed_attention` case (tests/model/test_gradcheck.py runs it for random shapes).

float64: 1e-12; float32 against the float64 reference: 2e-6 of the quantity's scale."""
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npbert import kernels, ops
from npbert.kernels import blas
from npbert.ops.dropout import dropout_key
from npbert.ops.packed_attention import AttentionLayout, unit_offsets

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = {np.float64: 1e-12, np.float32: 2e-6}


def dropout_rng(seed):
    """The Generator whose first key both cores use: the padded core then drops what the packed one drops."""
    return np.random.default_rng(seed + 1)


@st.composite
def batches(draw):
    """(mask (S, T) bool, query (S, T) bool within it, A, D, p_drop, seed)."""
    S, T = draw(st.integers(1, 5)), draw(st.integers(1, 9))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, T + 1, S)
    lengths[0] = 1                                                                # a 1-token sequence
    if draw(st.booleans()):
        mask = np.arange(T)[None, :] < lengths[:, None]                           # right padding: keys 0..n-1
    else:
        mask = np.stack([np.isin(np.arange(T), rng.choice(T, n, replace=False)) for n in lengths])  # scattered
    query = mask.copy() if draw(st.booleans()) else mask & (rng.random((S, T)) < 0.5)  # every row, or a subset
    return mask, query, draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.sampled_from([0.0, 0.3])), seed


def packed(mask, query, A, D, p_drop, seed, dtype):
    """(q (M, H), k, v (N, H), dcontext (M, H), layout, the dropout key or None) of a batch drawn by batches()."""
    rng = np.random.default_rng(seed)
    S, T = mask.shape
    H = A * D
    seq = np.nonzero(mask)[0]                                                      # (N,) each key's sequence
    k_positions, q_positions = np.nonzero(mask)[1], np.nonzero(query)[1]
    layout = AttentionLayout(query.sum(axis=1), mask.sum(axis=1), q_positions, k_positions, T)
    M, N = len(q_positions), len(seq)
    q, dc = (rng.standard_normal((M, H)).astype(dtype) for _ in range(2))
    k, v = (rng.standard_normal((N, H)).astype(dtype) for _ in range(2))
    key = dropout_key(dropout_rng(seed)) if p_drop else None
    return q, k, v, dc, layout, key


def scaled(got, want):
    return np.abs(got - want).max(initial=0.0) / max(np.abs(want).max(initial=0.0), 1.0)


# --- the reference is the padded attention at the real positions -------------------------------------

@SETTINGS
@given(batch=batches())
def test_reference_is_the_padded_attention_at_the_real_positions(batch):
    mask, query, A, D, p_drop, seed = batch
    q, k, v, dc, layout, key = packed(mask, query, A, D, p_drop, seed, np.float64)
    S, T = mask.shape
    context, cache = ops.packed_attention_forward(q, k, v, layout, A, p_drop, key)
    dq, dk, dv = ops.packed_attention_backward(dc, cache)

    def padded(rows, x, where):                        # (rows, H) at `where` -> (S, A, T, D), zero elsewhere
        full = np.zeros((S, T, A * D))
        full[where] = x
        return ops.split_heads(full, A)
    pq, pk, pv, pdc = padded(M := len(q), q, query), padded(0, k, mask), padded(0, v, mask), padded(M, dc, query)
    rng = None if key is None else dropout_rng(seed)
    want, want_cache = ops.attention_core_forward(pq, pk, pv, ops.attention_mask_bias(mask, np.float64), p_drop, rng)
    want_dq, want_dk, want_dv = ops.attention_core_backward(pdc, want_cache)

    def real(x, where):                                # (S, A, T, D) -> (rows, H) at `where`
        return ops.merge_heads(x)[where]
    assert np.abs(context - real(want, query)).max(initial=0.0) < 1e-12
    for got, x, where in ((dq, want_dq, query), (dk, want_dk, mask), (dv, want_dv, mask)):
        assert np.abs(got - real(x, where)).max(initial=0.0) < 1e-12
    offsets = unit_offsets(layout, A)
    for s in range(S):                                 # the flat probs and keep, unit by unit
        for a in range(A):
            block = slice(offsets[s * A + a], offsets[s * A + a + 1])
            rows, keys = np.nonzero(query[s])[0], np.nonzero(mask[s])[0]
            probs = want_cache.probs[s, a][np.ix_(rows, keys)]
            assert np.abs(cache.probs[block] - probs.reshape(-1)).max(initial=0.0) < 1e-12
            if key is not None:
                assert (cache.keep[block] == want_cache.keep[s, a][np.ix_(rows, keys)].reshape(-1)).all()
    assert (cache.keep is None) == (key is None)


# --- the kernel is the reference ----------------------------------------------------------------------

needs_openblas = pytest.mark.skipif(not blas.available(), reason="NumPy does not use OpenBLAS here")


def kernel_and_reference(q, k, v, dc, layout, A, key, p_drop):
    """(kernel's forward, its cache, its backward, the reference's in float64 on the same inputs,
    the reference's cache, the kernel's backward of the reference's cache (cast to q's dtype))."""
    got, cache = kernels.packed_attention_forward(q, k, v, layout, A, p_drop, key)
    grads = kernels.packed_attention_backward(dc, cache)
    wide = [x.astype(np.float64) for x in (q, k, v, dc)]
    want, want_cache = ops.packed_attention_forward(*wide[:3], layout, A, p_drop, key)
    want_grads = ops.packed_attention_backward(wide[3], want_cache)
    reference_cache = ops.packed_attention_forward(q, k, v, layout, A, p_drop, key)[1]
    return got, cache, grads, want, want_cache, want_grads, reference_cache


@needs_openblas
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_threads", [1, 2])
@SETTINGS
@given(batch=batches())
def test_kernel_matches_the_reference(dtype, n_threads, batch):
    mask, query, A, D, p_drop, seed = batch
    q, k, v, dc, layout, key = packed(mask, query, A, D, p_drop, seed, dtype)
    with mock.patch.dict("os.environ", {"NPBERT_NUM_THREADS": str(n_threads)}):
        got, cache, grads, want, want_cache, want_grads, ref_cache = kernel_and_reference(q, k, v, dc, layout, A,
                                                                                          key, p_drop)
        assert got.dtype == dtype and got.shape == q.shape and cache.probs.dtype == dtype
        assert scaled(got, want) <= TOL[dtype]
        assert scaled(cache.probs, want_cache.probs) <= TOL[dtype]
        assert (cache.keep is None) == (want_cache.keep is None)
        if cache.keep is not None:                     # the same uniforms (integers) against the same p
            np.testing.assert_array_equal(cache.keep, want_cache.keep)
        assert cache.drop_scale == dtype(want_cache.drop_scale) and type(cache.drop_scale) is dtype
        for g, w, x in zip(grads, want_grads, (q, k, v)):
            assert g.dtype == dtype and g.shape == x.shape and scaled(g, w) <= TOL[dtype]
        for g, w in zip(kernels.packed_attention_backward(dc, ref_cache), want_grads):   # either's cache
            assert scaled(g, w) <= TOL[dtype]
        for g, w in zip(ops.packed_attention_backward(dc, cache), want_grads):
            assert scaled(g, w) <= TOL[dtype]


@SETTINGS
@given(batch=batches())
def test_without_openblas_the_kernel_is_the_reference(batch):
    mask, query, A, D, p_drop, seed = batch
    q, k, v, dc, layout, key = packed(mask, query, A, D, p_drop, seed, np.float32)
    with mock.patch("npbert.kernels.packed_attention.gemm_address_for", lambda *views: 0):
        got, cache = kernels.packed_attention_forward(q, k, v, layout, A, p_drop, key)
        grads = kernels.packed_attention_backward(dc, cache)
    want, want_cache = ops.packed_attention_forward(q, k, v, layout, A, p_drop, key)
    np.testing.assert_array_equal(got, want)           # the same code: the reference's own numbers
    np.testing.assert_array_equal(cache.probs, want_cache.probs)
    for g, w in zip(grads, ops.packed_attention_backward(dc, want_cache)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("impl", [kernels, ops])
def test_dropout_refuses_a_layout_whose_seq_len_does_not_cover_its_positions(impl):
    mask = np.array([[True, True, False], [True, True, True]])
    q, k, v, dc, layout, key = packed(mask, mask, 2, 3, 0.3, 0, np.float32)
    for seq_len in (0, 2):                             # none given; one position short
        with pytest.raises(ValueError, match="seq_len"):
            impl.packed_attention_forward(q, k, v, layout._replace(seq_len=seq_len), 2, 0.3, key)
    impl.packed_attention_forward(q, k, v, layout._replace(seq_len=0), 2, 0.0, None)   # no dropout: not needed
