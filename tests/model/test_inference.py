"""npbert.inference (the packed forward that skips padding) held to bert_forward,
pretraining_forward and task_model_forward (every head): float64 to 1e-12 at every real
position, float32 against the float64 answer, on hypothesis-drawn batches (lengths, left
padding, holes), both backends."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npbert
from npbert import BertConfig, InputError, init_params
from npbert.gradcheck.checker import scaled_error
from npbert.heads.feature_based import with_features
from npbert.heads.head import CLS, TOKENS
from npbert.heads.params import init_head
from npbert.heads.registry import HEADS
from npbert.heads.task_model import task_model_forward
from npbert.inference import (bert_inference, masked_lm_inference, masked_lm_log_probs, pretraining_inference,
                              task_inference)
from npbert.layers.layout import Packed
from npbert.model import bert_forward, pretraining_forward
from npbert.ops import IGNORE_INDEX

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CONFIG = BertConfig(vocab_size=37, hidden_size=12, num_hidden_layers=2, num_attention_heads=3, intermediate_size=20,
                    max_position_embeddings=16)


def batch(seed, B, T, layout):
    """A random batch; layout: "full" (no padding), "right" (padding after each sequence,
    some of equal length), "any" (random holes after position 0: gaps; [CLS] is real, the pooler
    reads it)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, CONFIG.vocab_size, (B, T))
    if layout == "full":
        mask = np.ones((B, T), np.int64)
    elif layout == "right":
        lengths = rng.choice([T, max(1, T - 2), rng.integers(1, T + 1)], B)
        mask = (np.arange(T) < lengths[:, None]).astype(np.int64)
    else:
        mask = (rng.random((B, T)) < 0.6).astype(np.int64)
        mask[:, 0] = 1                                              # [CLS], which the pooler reads
    types = (rng.random((B, T)) < 0.5).astype(np.int64) * mask
    real = np.flatnonzero(mask)
    positions = rng.choice(real, min(len(real), 5), replace=False)
    return dict(input_ids=np.where(mask == 1, ids, 0), token_type_ids=types, attention_mask=mask,
                mlm_positions=positions, mlm_labels=rng.integers(0, CONFIG.vocab_size, len(positions)),
                nsp_labels=rng.integers(0, 2, B))


def models(seed):
    p64 = init_params(CONFIG, np.random.default_rng(seed), dtype=np.float64)
    p64 = {k: v + 0.05 * np.random.default_rng(seed + 1).standard_normal(v.shape) for k, v in p64.items()}
    return p64, {k: v.astype(np.float32) for k, v in p64.items()}   # LN and biases non-trivial


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@SETTINGS
@given(seed=st.integers(0, 999), B=st.integers(1, 5), T=st.integers(1, 16), layout=st.sampled_from(["full", "right", "any"]))
def test_packed_forward_is_bert_forward_at_real_positions(backend, seed, B, T, layout):
    b = batch(seed, B, T, layout)
    p64, p32 = models(seed)
    inputs = (b["input_ids"], b["token_type_ids"], b["attention_mask"])
    real = b["attention_mask"][..., None] == 1                          # (B, T, 1)
    with npbert.backend.use_backend(backend):
        (h, pooled), _ = bert_forward(p64, CONFIG, *inputs)
        h64, pooled64 = bert_inference(p64, CONFIG, *inputs)
        h32, pooled32 = bert_inference(p32, CONFIG, *inputs)
        out = pretraining_forward(p64, CONFIG, **b)[0]
        out64, out32 = pretraining_inference(p64, CONFIG, **b), pretraining_inference(p32, CONFIG, **b)
    assert np.abs(np.where(real, h64 - h, 0)).max() < 1e-12
    assert (h64[~real[..., 0]] == 0).all() and (h32[~real[..., 0]] == 0).all()   # padding: not computed
    # float32 against float64 (tolerances as the kernel tests': 2e-6 of each tensor's scale)
    assert scaled_error(np.where(real, h32, 0), np.where(real, h, 0)) < 2e-6
    for got64, got32, exact in ((pooled64, pooled32, pooled), (out64["nsp_logits"], out32["nsp_logits"],
                                                                out["nsp_logits"])):
        assert np.abs(got64 - exact).max() < 1e-12
        assert scaled_error(got32, exact) < 2e-6
    assert "mlm_logits" not in out64 and len(out64["mlm_predictions"]) == len(out["mlm_logits"])   # fused
    for key in ("loss", "mlm_loss", "nsp_loss"):
        assert abs(out64[key] - out[key]) < 1e-12, key
        assert abs(out32[key] - out[key]) < 2e-6 * max(1.0, abs(out[key])), key


def test_packing_layouts():
    mask = np.array([[1, 1, 0], [1, 1, 0], [1, 1, 1], [1, 0, 1]])
    packed = Packed(mask)
    assert packed.lengths.tolist() == [2, 2, 3, 2] and packed.starts.tolist() == [0, 2, 4, 7]
    assert packed.positions.tolist() == [0, 1, 0, 1, 0, 1, 2, 0, 2]          # a gap keeps its position id
    x = np.arange(len(packed.flat))[:, None] * 1.0                     # (N, 1)
    assert (packed.rows_of(packed.batched(x)) == x).all()
    layout = packed.attention_layout(np.array([0, 5, 6, 7]))            # queries: 1, 0, 2, 1 a sequence
    assert layout.q_lengths.tolist() == [1, 0, 2, 1] and layout.q_positions.tolist() == [0, 1, 2, 0]
    assert layout.k_lengths.tolist() == [2, 2, 3, 2]


def test_a_padded_cls_is_refused_where_the_pooler_reads_it():
    mask = np.array([[1, 1, 1], [0, 1, 1]])                            # left padding: [CLS] is padding
    with pytest.raises(InputError, match=r"attention_mask\[1, 0\] is 0: the pooler reads position 0"):
        bert_inference(models(0)[1], CONFIG, np.ones((2, 3), np.int64), attention_mask=mask)
    no_pooler = {k: v for k, v in models(0)[1].items() if "pooler" not in k}
    h, pooled = bert_inference(no_pooler, CONFIG, np.ones((2, 3), np.int64), attention_mask=mask)
    assert pooled is None and (h[1, 0] == 0).all()                    # without a pooler nothing reads it


def test_mlm_position_on_padding_is_refused():
    b = batch(0, 2, 6, "right")
    b["attention_mask"][1, 3:] = 0
    b["mlm_positions"] = np.array([1, 6 + 4])                          # sequence 1, position 4: padding
    b["mlm_labels"] = np.array([3, 4])
    with pytest.raises(InputError, match=r"sequence 1, position 4\), a padded position"):
        pretraining_inference(models(0)[1], CONFIG, **b)


def test_bad_input_gets_the_models_errors():
    p32 = models(0)[1]
    with pytest.raises(InputError, match="outside"):
        bert_inference(p32, CONFIG, np.array([[1, 99]]))
    with pytest.raises(InputError, match="longer than max_position_embeddings"):
        bert_inference(p32, CONFIG, np.ones((1, 17), np.int64))
    with pytest.raises(InputError, match="masks every token"):
        bert_inference(p32, CONFIG, np.ones((2, 3), np.int64), attention_mask=np.array([[1, 1, 0], [0, 0, 0]]))


# --- the heads: task_inference against task_model_forward(rng=None) ---------------------------------

def head_batch(head, num_labels, seed, B, T, layout, C=3):
    """A batch for head (choices: (B, C, T), each choice a sequence of batch()'s layout) with targets."""
    rng = np.random.default_rng(seed + 7)
    b = batch(seed, B * C if head.choices else B, T, layout)
    inputs = {k: b[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    if head.choices:
        inputs = {k: v.reshape(B, C, T) for k, v in inputs.items()}
        return dict(inputs, labels=rng.integers(0, C, B))
    if head.reads_padding:          # QA: positions anywhere in the window, as Hugging Face clamps them
        return dict(inputs, start_positions=rng.integers(0, T, B), end_positions=rng.integers(0, T, B))
    if head.reads != CLS:           # tokens: IGNORE_INDEX on padding (and on some real tokens), as encoded
        labels = rng.integers(0, num_labels, (B, T))
        return dict(inputs, labels=np.where((inputs["attention_mask"] == 1) & (rng.random((B, T)) < 0.8),
                                            labels, IGNORE_INDEX))
    return dict(inputs, labels=rng.random(B) if num_labels == 1 else rng.integers(0, num_labels, B))


def head_models(head, num_labels, seed, config=CONFIG):
    p64, _ = models(seed)
    p64.update(init_head(config, head, num_labels, np.random.default_rng(seed + 2), np.float64))
    p64 = {k: v + 0.05 * np.random.default_rng(seed + 3).standard_normal(v.shape) for k, v in p64.items()}
    return p64, {k: v.astype(np.float32) for k, v in p64.items()}


HEAD_CASES = [(kind, 3) for kind in HEADS] + [("sequence_classification", 1)]     # 1 label: regression


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("kind,num_labels", HEAD_CASES)
@SETTINGS
@given(seed=st.integers(0, 999), B=st.integers(1, 4), T=st.integers(1, 16), layout=st.sampled_from(["full", "right", "any"]))
def test_task_inference_is_task_model_forward(backend, kind, num_labels, seed, B, T, layout):
    head = HEADS[kind]
    b = head_batch(head, num_labels, seed, B, T, layout)
    p64, p32 = head_models(head, num_labels, seed)
    with npbert.backend.use_backend(backend):
        exact = task_model_forward(head, p64, CONFIG, **b, rng=None)[0]
        out64, out32 = task_inference(head, p64, CONFIG, **b), task_inference(head, p32, CONFIG, **b)
    mask = b["attention_mask"]
    # where each output row is computed from real tokens only: a [CLS] head's row needs a real
    # position 0 (the packed pooler reads a zero row where bert_forward pools padding), a token
    # head's logits the real positions; QA's run on the padded forward, every position
    real = (mask[..., 0] == 1) if head.reads == CLS and not head.reads_padding else np.ones(mask.shape[:-1], bool)
    if head.choices:
        real = real.all(axis=1)                                         # (B,) all C choices
    for key, want in exact.items():
        if want is None or key.endswith(("labels", "positions")):
            assert out64[key] is None if want is None else (out64[key] == want).all(), key
            continue
        if key == "loss":
            if real.all():
                assert abs(out64[key] - want) < 1e-12
                assert abs(out32[key] - want) < 2e-6 * max(1.0, abs(want))
            continue
        keep = (real[:, None] & (mask == 1))[..., None] if head.reads == TOKENS and not head.reads_padding \
            else real.reshape(-1, *[1] * (want.ndim - 1))               # broadcast over the output's rows
        assert np.abs(np.where(keep, out64[key] - want, 0)).max(initial=0) < 1e-12, key
        assert scaled_error(np.where(keep, out32[key], 0), np.where(keep, want, 0)) < 2e-6, key


def test_a_token_label_on_padding_is_refused():
    head = HEADS["token_classification"]
    b = head_batch(head, 3, 0, 2, 6, "right")
    b["attention_mask"][1, 4:] = 0
    b["labels"][1, 5] = 2
    with pytest.raises(InputError, match=r"labels\[1, 5\] scores a padded position"):
        task_inference(head, head_models(head, 3, 0)[1], CONFIG, **b)
    with pytest.raises(InputError, match="takes labels as targets, not nsp_labels"):
        task_inference(head, head_models(head, 3, 0)[1], CONFIG, b["input_ids"], nsp_labels=b["labels"])


def test_a_feature_based_model_keeps_its_own_forward():
    config = with_features(CONFIG, "weighted-all")
    head = HEADS["sequence_classification"]
    b = head_batch(head, 3, 1, 3, 7, "right")
    p64 = head_models(head, 3, 1, config)[0]
    out, exact = task_inference(head, p64, config, **b), task_model_forward(head, p64, config, **b)[0]
    assert (out["logits"] == exact["logits"]).all() and out["loss"] == exact["loss"]   # one path: the same bits


@SETTINGS
@given(seed=st.integers(0, 999), B=st.integers(1, 5), T=st.integers(1, 16), layout=st.sampled_from(["full", "right", "any"]))
def test_masked_lm_inference_is_the_mlm_head_without_a_pooler(seed, B, T, layout):
    """Its top k and log p at given targets: those of the padded reference's whole logits (float64
    1e-12, float32 2e-6), with or without a pooler, on either backend."""
    b = batch(seed, B, T, layout)
    p64, p32 = models(seed)
    exact = pretraining_forward(p64, CONFIG, **b)[0]["mlm_logits"]                     # (M, V)
    log_p = exact - np.log(np.exp(exact - exact.max(1, keepdims=True)).sum(1, keepdims=True)) - exact.max(
        1, keepdims=True)                                                              # (M, V)
    inputs = [b[k] for k in ("input_ids", "token_type_ids", "attention_mask", "mlm_positions")]
    targets = np.random.default_rng(seed).integers(0, CONFIG.vocab_size, len(exact))
    no_pooler = {k: v for k, v in p32.items() if "pooler" not in k and "seq_relationship" not in k}
    for name in ("numpy", "numba"):
        with npbert.backend.use_backend(name):
            ids, top = masked_lm_inference(p64, CONFIG, *inputs, top_k=3)             # (M, 3) each
            assert np.abs(top - np.take_along_axis(log_p, ids, axis=1)).max(initial=0) < 1e-12
            assert (np.diff(top, axis=1) <= 0).all()                                  # likeliest first ...
            assert np.abs(top[:, 0] - log_p.max(axis=1, initial=-np.inf)).max(initial=0) < 1e-12   # ... the best
            picked = log_p[np.arange(len(targets)), targets]
            assert np.abs(masked_lm_log_probs(p64, CONFIG, *inputs, targets=targets) - picked).max(initial=0) < 1e-12
            got32 = masked_lm_log_probs(no_pooler, CONFIG, *inputs, targets=targets)
            assert got32.dtype == np.float64 and np.abs(got32 - picked).max(initial=0) < 2e-5


def test_the_commands_run_the_packed_forward(monkeypatch):
    """evaluate / predict / the fine-tuning run's evaluations (run_model), pretraining's held-out
    evaluation and fill-mask: none of them runs BertModel on the padded layout any more."""
    from npbert import model
    from npbert.fill_mask import fill_mask
    from npbert.finetuning.evaluation import run_model
    from npbert.pretraining.evaluation import evaluate
    from npbert.tokenizer import BertTokenizer

    def padded(*args, **kwargs):
        raise AssertionError("BertModel ran on the padded layout")
    monkeypatch.setattr(model, "Padded", padded)              # every model makes its layout in model.make_layout
    head = HEADS["sequence_classification"]
    params = head_models(head, 3, 0)[1]
    features = [dict(input_ids=[2] + [5 + i] * n + [3], token_type_ids=[0] * (n + 2), labels=n % 3)
                for i, n in enumerate((3, 9, 1, 6, 6))]
    outputs, loss = run_model(params, CONFIG, head, features, 2, 0)
    assert len(outputs) == 5 and outputs[0].shape == (3,) and np.isfinite(loss)

    class Heldout:
        def batches(self, batch_size, seed, epoch):
            return (batch(s, batch_size, 9, "right") for s in range(3))
    assert set(evaluate(params, CONFIG, Heldout(), 4)) == {"mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc"}
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(32)])
    guesses = fill_mask(params, CONFIG, tokenizer, "w1 [MASK] w2 [MASK]", top_k=2)
    assert [len(g) for g in guesses] == [2, 2]
