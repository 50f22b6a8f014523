"""The whole pretraining step on the numba backend, held to the NumPy reference: across
activations and dropout, on two threads, float32 against float64, and the gradient check's
rows (every hot op, composite and whole model) through the kernels."""
import numpy as np
import pytest

from npbert import backend, kernels
from npbert.config import BertConfig
from npbert.gradcheck import Dims, float32_errors, run_gradchecks
from npbert.model import pretraining_backward, pretraining_forward
from npbert.model_params import init_params


def _pretraining_step(params, config, batch, seed):
    out, cache = pretraining_forward(params, config, **batch, rng=np.random.default_rng(seed))
    return out, pretraining_backward(cache)


def assert_step_matches_the_reference(params, config, batch):
    """One float64 pretraining step (forward, backward, seed 1) on the numba backend against the
    numpy one: outputs to 1e-10 relative, each gradient to 1e-10 of its size."""
    with backend.use_backend("numpy"):
        out_ref, g_ref = _pretraining_step(params, config, batch, seed=1)
    with backend.use_backend("numba"):
        out, g = _pretraining_step(params, config, batch, seed=1)
    for key in ("loss", "mlm_loss", "nsp_loss", "mlm_logits", "nsp_logits"):
        np.testing.assert_allclose(out[key], out_ref[key], rtol=1e-10, atol=0, err_msg=key)
    assert g.keys() == g_ref.keys()
    scale = max(np.abs(v).max() for v in g_ref.values())
    for key in g_ref:                                  # the key bias gradient is 0 up to rounding: scale by all
        assert np.abs(g[key] - g_ref[key]).max() <= 1e-10 * max(np.abs(g_ref[key]).max(), 1e-3 * scale), key


@pytest.mark.parametrize("act, dropout", [("gelu", 0.1), ("gelu_new", 0.0)])
def test_pretraining_step_agrees_across_backends(act, dropout):
    config = BertConfig(vocab_size=97, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                        intermediate_size=40, hidden_act=act, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout, max_position_embeddings=16)
    rng = np.random.default_rng(0)
    params = init_params(config, rng, dtype=np.float64)
    B, T = 3, 11
    mask = np.ones((B, T), np.int64)
    mask[0, 7:], mask[2, 2:] = 0, 0
    batch = dict(input_ids=rng.integers(0, 97, (B, T)), token_type_ids=(np.arange(T) > 5) * np.ones((B, 1), int),
                 attention_mask=mask, mlm_positions=np.array([1, 3, 3, 12, 20, 30]),
                 mlm_labels=np.array([5, 6, -100, 8, 9, 96]), nsp_labels=np.array([0, 1, 1]))
    assert_step_matches_the_reference(params, config, batch)


def test_pretraining_step_on_two_threads_matches_the_reference(monkeypatch):
    # large enough that the row kernels split too (512 rows); every matmul split (no minimum)
    from npbert.kernels import matmul
    monkeypatch.setenv("NPBERT_NUM_THREADS", "2")
    monkeypatch.setattr(matmul, "MIN_FLOP_PER_PART", 0)
    config = BertConfig(vocab_size=300, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=256, max_position_embeddings=64)
    rng = np.random.default_rng(0)
    params = init_params(config, rng, dtype=np.float64)
    B, T = 8, 64
    mask = (np.arange(T) < rng.integers(10, T + 1, (B, 1))).astype(np.int64)
    batch = dict(input_ids=rng.integers(0, 300, (B, T)), attention_mask=mask, mlm_positions=np.arange(0, B * T, 37),
                 mlm_labels=rng.integers(0, 300, len(range(0, B * T, 37))), nsp_labels=rng.integers(0, 2, B))
    assert_step_matches_the_reference(params, config, batch)


def test_pretraining_step_float32_tracks_float64():
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=8)
    params = init_params(config, np.random.default_rng(0), dtype=np.float64)
    batch = dict(input_ids=np.arange(16).reshape(2, 8), mlm_positions=np.array([2, 9]),
                 mlm_labels=np.array([4, 7]), nsp_labels=np.array([0, 1]))
    with backend.use_backend("numba"):
        out64, g64 = _pretraining_step(params, config, batch, seed=3)
        out32, g32 = _pretraining_step({k: v.astype(np.float32) for k, v in params.items()}, config, batch, seed=3)
    assert out32["loss"].dtype == np.float32 and abs(out32["loss"] - out64["loss"]) < 1e-5 * abs(out64["loss"])
    assert all(g32[key].dtype == np.float32 for key in g64)
    errors = float32_errors(g32, g64)                  # each tensor against its own scale
    assert not {k: e for k, e in errors.items() if e >= 1e-4}


def test_every_gradcheck_row_passes_on_the_numba_backend():
    # the hot-op rows call npbert.backend, so this checks each kernel's backward against finite
    # differences, then every composite and whole model built on them
    with backend.use_backend("numba"):
        results = run_gradchecks(Dims(dropout=0.1, lengths=(3, 5)))
    assert not {r.name: r.max_error for r in results if not r.passed}


def test_whole_model_gradient_through_the_numba_backend():
    with backend.use_backend("numba"):
        r = run_gradchecks(Dims(B=2, T=4, heads=2, head_size=2, I=5, V=7, layers=1, dropout=0.1, lengths=(2, 4)),
                           names=["bert_for_pretraining"])[0]
    assert r.passed, {k: v for k, v in r.errors.items() if v >= r.tol}


def test_gradcheck_rows_check_the_backend_in_force(monkeypatch):
    # a kernel backward 1% wrong in gamma must fail the layernorm row
    right = kernels.layernorm_backward

    def wrong(dy, cache):
        dx, dgamma, dbeta = right(dy, cache)
        return dx, dgamma * 1.01, dbeta
    monkeypatch.setattr(kernels, "layernorm_backward", wrong)
    with backend.use_backend("numba"):
        r = run_gradchecks(Dims(), names=["layernorm"])[0]
    assert not r.passed and r.errors["gamma"] > 1e-3 and r.errors["x"] < r.tol
