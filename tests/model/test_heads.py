"""The fine-tuning heads: gradients against finite differences (hypothesis shapes), against
PyTorch autograd through Hugging Face's classes (fixture from tests/reference/), the loss
conventions, and clear errors."""
import functools
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npbert.config import BertConfig
from npbert.errors import CheckpointError, InputError
from npbert.gradcheck import TOL, Dims, check, float32_errors, op_cases, run_gradchecks
from npbert.heads.params import check_head, finetuned_config, head_shapes, init_head, label_names_of
from npbert.heads.registry import HEADS
from npbert.heads.task_model import model_of, task_model_backward, task_model_forward
from npbert.model_params import init_params
from support.paths import FIXTURES


def model_forward(kind):
    forward, _ = model_of(BertConfig(), HEADS[kind])        # a config without a feature-based choice: BertFor<kind>
    return forward


sequence_classification_forward, token_classification_forward, question_answering_forward, multiple_choice_forward = (
    model_forward(k) for k in ("sequence_classification", "token_classification", "question_answering",
                               "multiple_choice"))

HEAD_OPS = ["classifier", "qa_head", "span_loss", "mse", "sequence_head", "sequence_head[regression]", "token_head",
            "span_head", "choice_head"]
WHOLE = ["bert_for_sequence_classification", "bert_for_sequence_regression", "bert_for_token_classification",
         "bert_for_question_answering", "bert_for_multiple_choice"]
FIXTURE = FIXTURES / "heads_gradients.npz"


@st.composite
def dims(draw):
    B, T = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    return Dims(B=B, T=T, heads=draw(st.integers(1, 2)), head_size=draw(st.integers(1, 3)), I=draw(st.integers(1, 5)),
                V=draw(st.integers(2, 8)), layers=draw(st.integers(1, 2)),
                hidden_act=draw(st.sampled_from(["gelu", "gelu_new"])), dropout=draw(st.sampled_from([0.0, 0.25])),
                lengths=tuple(draw(st.lists(st.integers(1, T), min_size=B, max_size=B))),
                seed=draw(st.integers(0, 2**16)))


def test_every_head_is_in_gradcheck():
    assert set(HEAD_OPS + WHOLE) <= set(op_cases(Dims()))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=dims())
def test_head_ops_gradients(d):
    for r in run_gradchecks(d, names=HEAD_OPS):
        assert r.passed, f"{r.name} {d}: {r.errors}"


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=dims())
def test_whole_models_with_heads_gradients(d):
    for r in run_gradchecks(d, names=WHOLE):
        assert r.passed, f"{r.name} {d}: {r.errors}"


@pytest.mark.parametrize("kind", list(HEADS))
def test_every_parameter_of_a_tiny_model_with_head(kind):
    # the gradcheck cases differentiate head + pooler + embeddings; here every parameter, once
    d = Dims(B=2, T=3, heads=1, head_size=2, I=3, V=5, layers=1, dropout=0.2, lengths=(2, 3))
    config, rng = d.config(), np.random.default_rng(1)
    params = {k: v for k, v in init_params(config, rng, np.float64).items() if not k.startswith("cls.")}
    params.update(init_head(config, HEADS[kind], 3, rng, np.float64))
    params = {k: v * 20 if v.ndim == 2 else v + 0.1 * rng.standard_normal(v.shape) for k, v in params.items()}
    ids, mask = rng.integers(0, 5, (2, 3)), d.attention_mask()
    if kind == "multiple_choice":
        data = dict(input_ids=np.stack([ids, ids[::-1]], 1), attention_mask=np.stack([mask, mask], 1),
                    labels=np.array([1, 0]))
    elif kind == "question_answering":
        data = dict(input_ids=ids, attention_mask=mask, start_positions=np.array([1, 2]),
                    end_positions=np.array([2, 9]))
    else:
        data = dict(input_ids=ids, attention_mask=mask,
                    labels=np.array([[0, 2, -100], [1, 1, 0]]) if kind == "token_classification" else np.array([2, 0]))
    forward, backward = model_of(config, HEADS[kind])

    def run(p):
        out, cache = forward(p, config, **data, rng=d.rng())
        return out["loss"], cache
    r = check(kind, params, run, lambda dl, c: backward(dl, c))
    assert r.passed, {k: v for k, v in r.errors.items() if v >= TOL}


# --- against Hugging Face (tests/reference/make_heads_fixture.py) ------------------------------------

def fixture_case(prefix):
    z = np.load(FIXTURE)
    meta = json.loads(str(z["metadata"]))
    config = BertConfig(**meta["config"])
    params = {k.split("/", 2)[2]: z[k] for k in z.files if k.startswith("seq/param/bert.")}
    params.update({k.split("/", 2)[2]: z[k] for k in z.files if k.startswith(f"{prefix}/param/")})
    grads = {k.split("/", 2)[2]: z[k] for k in z.files if k.startswith(f"{prefix}/grad/")}
    inputs = {k.split("/", 2)[2]: z[k] for k in z.files if k.startswith(f"{prefix}/input/")}
    outputs = {k.split("/", 1)[1]: z[k] for k in z.files if k.startswith(prefix + "/") and k.count("/") == 1}
    return meta["heads"][prefix][1], config, params, grads, inputs, outputs


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("prefix", ["seq", "reg", "tok", "qa", "mc"])
def test_loss_logits_and_every_gradient_match_transformers(prefix, packed):
    """The reference (padded) model, and the packed one the fine-tuning loop trains (model_of):
    it computes no padding, so a head on every token has other logits there (which no loss,
    prediction or metric reads) and is compared at the real tokens."""
    kind, config, params, hf_grads, inputs, hf_out = fixture_case(prefix)
    backward = task_model_backward
    forward = model_of(config, HEADS[kind])[0] if packed else functools.partial(task_model_forward, HEADS[kind])
    out, cache = forward(params, config, **inputs)
    assert abs(float(out["loss"]) - float(hf_out["loss"])) < 1e-12
    real = np.asarray(inputs.get("attention_mask", 1)) == 1
    for k in ("logits", "start_logits", "end_logits"):
        if k in hf_out:
            error = np.abs(out[k] - hf_out[k])
            if packed and out[k].shape[:real.ndim] == real.shape:
                error = error[real]                   # (B, T, K) at the real tokens
            assert error.max() < 1e-12, k
    grads = backward(1.0, cache)      # the [PAD] row too: QA's span softmax reaches padded positions
    for name, g in hf_grads.items():
        assert np.abs(grads[name] - g).max() < 1e-12, name
    for name in set(grads) - set(hf_grads):          # HF's token/QA models have no pooler
        assert name.startswith("bert.pooler.") and not grads[name].any()


# --- conventions --------------------------------------------------------------------------------------

def tiny(kind, num_labels=3, seed=0, dtype=np.float64):
    config = BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                        max_position_embeddings=12, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    rng = np.random.default_rng(seed)
    params = {k: v for k, v in init_params(config, rng, dtype).items() if not k.startswith("cls.")}
    params.update(init_head(config, HEADS[kind], num_labels, rng, dtype))
    return config, params


def test_multiple_choice_scores_each_choice_as_its_own_sequence():
    config, params = tiny("multiple_choice", 1)
    ids = np.random.default_rng(0).integers(0, 20, (2, 3, 5))                # (B, C, T)
    out, _ = multiple_choice_forward(params, config, ids, labels=np.array([0, 2]))
    for c in range(3):   # the same head on each choice alone gives that column of the (B, C) logits
        single, _ = sequence_classification_forward(params, config, ids[:, c])
        assert np.allclose(out["logits"][:, c], single["logits"][:, 0])
    z = out["logits"] - out["logits"].max(1, keepdims=True)
    expected = -np.mean((z - np.log(np.exp(z).sum(1, keepdims=True)))[[0, 1], [0, 2]])
    assert abs(float(out["loss"]) - expected) < 1e-12


def test_qa_loss_is_the_mean_of_start_and_end_and_ignores_positions_past_the_window():
    config, params = tiny("question_answering")
    ids = np.random.default_rng(1).integers(0, 20, (2, 6))
    out, _ = question_answering_forward(params, config, ids, start_positions=[1, 6], end_positions=[3, 4])
    s, e = out["start_logits"], out["end_logits"]
    ce = lambda row, y: np.log(np.exp(row).sum()) - row[y]  # noqa: E731
    expected = (ce(s[0], 1) + (ce(e[0], 3) + ce(e[1], 4)) / 2) / 2     # start of row 1 is T: ignored
    assert abs(float(out["loss"]) - expected) < 1e-12
    clamped, _ = question_answering_forward(params, config, ids, start_positions=[1, 99], end_positions=[3, 4])
    assert float(clamped["loss"]) == float(out["loss"])   # exactly: 6 and 99 are both ignored, the same computation


def test_token_classification_ignores_labelled_minus_100():
    config, params = tiny("token_classification")
    ids = np.random.default_rng(2).integers(0, 20, (1, 4))
    labels = np.array([[-100, 2, -100, 0]])
    out, cache = token_classification_forward(params, config, ids, labels=labels)
    logp = out["logits"][0] - np.log(np.exp(out["logits"][0]).sum(-1, keepdims=True))
    assert abs(float(out["loss"]) + (logp[1, 2] + logp[3, 0]) / 2) < 1e-12


def test_regression_uses_mean_squared_error():
    config, params = tiny("sequence_classification", 1)
    ids = np.random.default_rng(3).integers(0, 20, (3, 4))
    out, _ = sequence_classification_forward(params, config, ids, labels=np.array([0.5, 1.0, -2.0]))
    assert out["logits"].shape == (3, 1)
    assert abs(float(out["loss"]) - np.mean((out["logits"][:, 0] - [0.5, 1.0, -2.0]) ** 2)) < 1e-12


def test_float32_heads_agree_with_float64():
    for kind in HEADS:
        c, p64 = tiny(kind, seed=4)
        p32 = {k: v.astype(np.float32) for k, v in p64.items()}
        ids = np.random.default_rng(5).integers(0, 20, (2, 2, 5) if kind == "multiple_choice" else (2, 5))
        labels = dict(question_answering=dict(start_positions=[1, 2], end_positions=[2, 3]),
                      token_classification=dict(labels=np.zeros((2, 5), int))).get(kind, dict(labels=[1, 0]))
        forward, backward = model_of(c, HEADS[kind])
        o64, c64 = forward(p64, c, ids, **labels)
        o32, c32 = forward(p32, c, ids, **labels)
        assert o32["loss"].dtype == np.float32
        assert abs(float(o32["loss"]) - float(o64["loss"])) < 1e-5 * float(o64["loss"])
        g64, g32 = backward(1.0, c64), backward(1.0, c32)
        assert all(g32[k].dtype == np.float32 for k in g64)
        # each tensor against its own scale (float32_errors), so an all-zero float32 gradient fails
        # however small its entries. Measured <= 1.2e-6, except multiple choice: the choices'
        # gradients enter with opposite signs (softmax over choices), so a parameter that moves
        # every choice's logit alike (a LayerNorm bias, the pooler bias) gets a difference of
        # near-equal sums, 9.1e-5 here: ~1e3 times float32's rounding, hence its 1e-3
        tol = 1e-3 if kind == "multiple_choice" else 1e-4
        errors = float32_errors(g32, g64)
        assert not {k: e for k, e in errors.items() if e >= tol}, kind


def test_dropout_is_used_in_training_and_off_in_evaluation():
    config, params = tiny("sequence_classification")
    config.hidden_dropout_prob = 0.5
    ids = np.random.default_rng(6).integers(0, 20, (4, 5))
    a, _ = sequence_classification_forward(params, config, ids)
    b, _ = sequence_classification_forward(params, config, ids)
    c, _ = sequence_classification_forward(params, config, ids, rng=np.random.default_rng(0))
    d, _ = sequence_classification_forward(params, config, ids, rng=np.random.default_rng(0))
    assert np.array_equal(a["logits"], b["logits"]) and np.array_equal(c["logits"], d["logits"])
    assert not np.allclose(a["logits"], c["logits"])


# --- errors and the HF config fields ------------------------------------------------------------------

def test_bad_labels_are_clear_errors():
    config, params = tiny("sequence_classification")
    ids = np.zeros((2, 3), int)
    with pytest.raises(InputError, match=r"labels\[1\] = 3 is outside \[0, 3\)"):
        sequence_classification_forward(params, config, ids, labels=[0, 3])
    with pytest.raises(InputError, match="shape"):
        sequence_classification_forward(params, config, ids, labels=[0, 1, 2])
    with pytest.raises(InputError, match="3-D"):
        multiple_choice_forward(params, config, ids, labels=[0, 1])
    with pytest.raises(InputError, match="both start_positions and end_positions"):
        question_answering_forward({**params, **init_head(config, HEADS["question_answering"], 2, np.random.default_rng(0))},
                                   config, ids, start_positions=[0, 1])


def test_check_head_names_the_checkpoint_when_the_hidden_size_does_not_fit():
    config, params = tiny("sequence_classification")
    assert check_head(params, config, HEADS["sequence_classification"], "ckpt") == 3
    params["classifier.weight"] = np.zeros((3, 7))
    with pytest.raises(CheckpointError, match="ckpt: classifier.weight has shape .*hidden_size 8"):
        check_head(params, config, HEADS["sequence_classification"], "ckpt")
    with pytest.raises(CheckpointError, match="no qa_outputs"):
        check_head(params, config, HEADS["question_answering"], "ckpt")


def test_finetuned_config_uses_hugging_face_fields():
    config = BertConfig(vocab_size=20, hidden_size=8, num_attention_heads=2)
    c = finetuned_config(config, HEADS["sequence_classification"], ["neg", "pos"])
    d = c.to_dict()
    assert d["architectures"] == ["BertForSequenceClassification"] and d["num_labels"] == 2
    assert d["id2label"] == {"0": "neg", "1": "pos"} and d["label2id"] == {"neg": 0, "pos": 1}
    assert d["problem_type"] == "single_label_classification"
    assert label_names_of(BertConfig.from_dict(json.loads(c.to_json_string()))) == ["neg", "pos"]
    assert finetuned_config(config, HEADS["sequence_classification"], ["score"]).extra["problem_type"] == "regression"
    assert finetuned_config(config, HEADS["question_answering"]).extra["architectures"] == ["BertForQuestionAnswering"]
    assert head_shapes(config, HEADS["multiple_choice"]) == {"classifier.weight": (1, 8), "classifier.bias": (1,)}
