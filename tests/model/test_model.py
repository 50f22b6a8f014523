"""The model: parameter counts, initialisation, float32 against float64, determinism, clear errors."""
import json

import numpy as np
import pytest

from npbert import BertConfig, InputError, count_params, init_params, param_shapes
from npbert.cli import main
from npbert.gradcheck import Dims, float32_errors
from npbert.model import bert_forward, pretraining_backward, pretraining_forward
from npbert.model_inputs import mlm_positions_from_labels


def test_parameter_counts_are_exact():
    assert count_params(BertConfig.from_preset("base")) == 109_482_240
    assert count_params(BertConfig.from_preset("large")) == 335_141_888
    # heads: transform dense + LN + output bias + NSP; the decoder is tied (no extra matrix)
    H, V = 768, 30522
    assert count_params(BertConfig.from_preset("base"), heads=True) == 109_482_240 + H * H + H + 2 * H + V + 2 * H + 2


def test_presets():
    expected = {"tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8), "medium": (8, 512, 8),
                "base": (12, 768, 12), "large": (24, 1024, 16)}
    for name, (L, H, A) in expected.items():
        c = BertConfig.from_preset(name)
        assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size) == (L, H, A, 4 * H)


def test_config_json_round_trip_keeps_hf_fields(tmp_path):
    c = BertConfig.from_preset("mini", vocab_size=8192)
    c.save(str(tmp_path))
    d = json.loads((tmp_path / "config.json").read_text())
    for field in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                  "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
                  "type_vocab_size", "initializer_range", "layer_norm_eps"):
        assert d[field] == getattr(c, field)
    assert d["model_type"] == "bert"
    assert BertConfig.load(str(tmp_path)) == c


def test_config_rejects_bad_values(tmp_path):
    with pytest.raises(ValueError, match="divisible"):
        BertConfig(hidden_size=10, num_attention_heads=3)
    with pytest.raises(ValueError, match="hidden_act"):
        BertConfig(hidden_act="relu")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        BertConfig.load(str(tmp_path))


def test_initialisation_follows_bert():
    c = BertConfig.from_preset("tiny", vocab_size=1000)
    p = init_params(c, np.random.default_rng(0))
    assert set(p) == set(param_shapes(c)) and all(p[k].shape == s for k, s in param_shapes(c).items())
    w = p["bert.encoder.layer.0.intermediate.dense.weight"]
    assert w.dtype == np.float32 and abs(w.std() - 0.02 * 0.88) < 0.001  # truncated at 2 sigma: std 0.88 sigma
    assert np.abs(w).max() <= 0.04
    assert (p["bert.embeddings.LayerNorm.weight"] == 1).all() and (p["cls.predictions.bias"] == 0).all()


def _batch(d, rng):
    B, T = d.B, d.T
    return dict(input_ids=rng.integers(0, d.V, (B, T)), token_type_ids=rng.integers(0, 2, (B, T)),
                attention_mask=d.attention_mask(), mlm_positions=np.array([1, 2, T + 1]),
                mlm_labels=rng.integers(0, d.V, 3), nsp_labels=rng.integers(0, 2, B))


def test_float32_matches_float64():
    d = Dims(B=3, T=9, heads=4, head_size=8, I=64, V=50, layers=2, lengths=(9, 4, 6))
    c = d.config()
    p64 = init_params(c, np.random.default_rng(0), np.float64)
    p32 = {k: v.astype(np.float32) for k, v in p64.items()}
    batch = _batch(d, np.random.default_rng(1))
    out64, cache64 = pretraining_forward(p64, c, **batch, rng=np.random.default_rng(5))
    out32, cache32 = pretraining_forward(p32, c, **batch, rng=np.random.default_rng(5))  # same dropout masks
    assert out32["loss"].dtype == np.float32 and out64["loss"].dtype == np.float64
    assert abs(out32["loss"] - out64["loss"]) < 1e-5 * abs(out64["loss"])
    g64, g32 = pretraining_backward(cache64), pretraining_backward(cache32)
    assert all(g32[k].dtype == np.float32 for k in g64)
    # each tensor against its own scale (float32_errors): measured <= 7e-7, so 1e-4 is a wide margin
    # that still fails an all-zero or 1%-wrong float32 gradient however small its entries
    errors = float32_errors(g32, g64)
    assert not {k: e for k, e in errors.items() if e >= 1e-4}


def test_same_seed_same_bits_with_dropout():
    d = Dims(B=2, T=7, heads=2, head_size=4, I=16, V=30, dropout=0.1)
    c = d.config()
    runs = []
    for _ in range(2):
        p = init_params(c, np.random.default_rng(3))
        out, cache = pretraining_forward(p, c, **_batch(d, np.random.default_rng(4)), rng=np.random.default_rng(9))
        runs.append((out["loss"], pretraining_backward(cache)))
    assert runs[0][0] == runs[1][0]
    assert all(np.array_equal(runs[0][1][k], runs[1][1][k]) for k in runs[0][1])


def test_padding_does_not_change_real_tokens():
    # appending padding (attention_mask 0) must leave the real tokens' outputs unchanged
    c = Dims(heads=2, head_size=4, I=16, V=30).config()
    p = init_params(c, np.random.default_rng(0), np.float64)
    ids = np.array([[2, 5, 7, 3]])
    (h, pooled), _ = bert_forward(p, c, ids)
    (h_pad, pooled_pad), _ = bert_forward(p, c, np.array([[2, 5, 7, 3, 0, 0]]), None, np.array([[1, 1, 1, 1, 0, 0]]))
    np.testing.assert_allclose(h_pad[:, :4], h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pooled_pad, pooled, rtol=1e-12, atol=1e-12)


def test_mlm_positions_from_hf_labels():
    labels = np.full((2, 4), -100)
    labels[0, 1], labels[1, 3] = 7, 9
    pos, lab = mlm_positions_from_labels(labels)
    assert pos.tolist() == [1, 7] and lab.tolist() == [7, 9]


@pytest.mark.parametrize("change, message", [
    (dict(input_ids=np.array([[1, 2, 30]])), r"input_ids\[0, 2\] = 30 is outside \[0, 30\)"),
    (dict(input_ids=np.array([[1, -1, 3]])), r"input_ids\[0, 1\] = -1"),
    (dict(input_ids=np.array([[1.0, 2.0]])), "integer"),
    (dict(input_ids=np.array([1, 2, 3])), "2-D"),
    (dict(input_ids=np.ones((1, 12), int)), "sequence length 12 is longer than max_position_embeddings"),
    (dict(token_type_ids=np.array([[0, 2, 0]])), r"token_type_ids\[0, 1\] = 2 is outside \[0, 2\)"),
    (dict(token_type_ids=np.array([[0, 1]])), r"token_type_ids has shape \(1, 2\), expected \(1, 3\)"),
    (dict(attention_mask=np.array([[1, 1]])), r"attention_mask has shape"),
    (dict(attention_mask=np.array([[0, 0, 0]])), "masks every token"),
    (dict(attention_mask=np.array([[1, 2, 1]])), "only 0"),
    (dict(mlm_positions=np.array([0, 3])), r"mlm_positions\[1\] = 3 is outside \[0, 3\)"),
    (dict(mlm_labels=np.array([5])), r"mlm_labels has shape \(1,\) but mlm_positions has \(2,\)"),
    (dict(mlm_labels=np.array([5, 31])), r"mlm_labels\[1\] = 31"),
    (dict(nsp_labels=np.array([0, 1])), r"nsp_labels has shape \(2,\), expected \(1,\)"),
    (dict(nsp_labels=np.array([2])), r"nsp_labels\[0\] = 2"),
])
def test_bad_inputs_get_clear_errors(change, message):
    c = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                   max_position_embeddings=10)
    p = init_params(c, np.random.default_rng(0))
    batch = dict(input_ids=np.array([[1, 2, 3]]), mlm_positions=np.array([0, 2]), mlm_labels=np.array([4, 5]),
                 nsp_labels=np.array([0]))
    batch.update(change)
    with pytest.raises(InputError, match=message):
        pretraining_forward(p, c, **batch)


def test_info_and_gradcheck_commands(capsys):
    assert main(["info", "base"]) == 0
    assert "109,482,240" in capsys.readouterr().out
    assert main(["info", "no-such-preset"]) == 2
    assert main(["gradcheck", "--only", "linear", "bert_for_pretraining"]) == 0
    out = capsys.readouterr().out
    assert "bert_for_pretraining" in out and "all passed" in out


def test_backend_flag_is_applied_by_the_cli(capsys):
    from npbert.backend import get_backend, set_backend
    before = get_backend()
    try:
        assert main(["gradcheck", "--backend", "numba", "--only", "layernorm"]) == 0
        assert get_backend() == "numba"
    finally:
        set_backend(before)


def test_params_without_a_pooler_are_a_clear_error_for_the_heads_that_need_one():
    """A BertModel saved without a pooler (HF's add_pooling_layer=False) runs as BertModel and
    for token-level heads; NSP and sequence classification say what is missing, instead of an
    AttributeError on None deep inside."""
    from npbert.heads.registry import HEADS
    from npbert.heads.task_model import model_of
    config = BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=8)
    (sequence_classification_forward, _), (token_classification_forward, _) = (
        model_of(config, HEADS[kind]) for kind in ("sequence_classification", "token_classification"))
    params = {k: v for k, v in init_params(config, np.random.default_rng(0)).items() if "pooler" not in k}
    ids = np.array([[1, 2, 3], [4, 5, 6]])
    (h, pooled), _ = bert_forward(params, config, ids)
    assert h.shape == (2, 3, 8) and pooled is None
    with pytest.raises(InputError, match="next-sentence prediction needs the pooler .*bert.pooler.dense.weight"):
        pretraining_forward(params, config, ids, nsp_labels=[0, 1])
    head = {"classifier.weight": np.zeros((3, 8), np.float32), "classifier.bias": np.zeros(3, np.float32)}
    with pytest.raises(InputError, match="BertForSequenceClassification needs the pooler"):
        sequence_classification_forward({**params, **head}, config, ids, labels=[0, 1])
    assert token_classification_forward({**params, **head}, config, ids)[0]["logits"].shape == (2, 3, 3)
