"""The trace: every intermediate of a forward and its gradient by a stable name, as documented
in docs/model.md, on both backends, right (checked against finite differences and the model's
own outputs) and without changing what it observes."""
import re

import numpy as np
import pytest

from npbert import backend
from npbert.config import BertConfig
from npbert.gradcheck import numerical_gradient
from npbert.heads.params import init_head
from npbert.heads.registry import HEADS
from npbert.heads.task_model import model_of
from npbert.layers.encoder import layer_params
from npbert.layers.encoder_layer import encoder_layer_forward
from npbert.layers.layout import Padded
from npbert.layers.mlm_head import mlm_head_forward
from npbert.layers.nsp_head import nsp_head_forward
from npbert.layers.pooler import pooler_forward
from npbert.model import bert_forward, pretraining_backward, pretraining_forward
from npbert.model_params import init_params
from npbert.ops import merge_heads, split_heads
from npbert.ops import cross_entropy_forward, softmax_forward
from npbert.trace import Trace
from support.paths import ROOT

DOC = ROOT / "docs" / "model.md"
CONFIG = BertConfig(vocab_size=40, hidden_size=12, num_hidden_layers=2, num_attention_heads=3, intermediate_size=20,
                    max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
NO_GRADIENT = {"bert.mask_bias", "mlm_loss", "nsp_loss", "loss"}


def documented_names(layers):
    """The names of the trace table in docs/model.md, in its order, {i} rows once per layer."""
    text = open(DOC, encoding="utf-8").read()
    table = text[text.index("## Every intermediate by name"):text.index("The fine-tuning models add")]
    rows = re.findall(r"^\| `([^`]+)` \|", table, flags=re.M)
    names, i = [], 0
    while i < len(rows):
        if "{i}" not in rows[i]:
            names.append(rows[i])
            i += 1
            continue
        block = []
        while i < len(rows) and "{i}" in rows[i]:
            block.append(rows[i])
            i += 1
        names += [row.replace("{i}", str(layer)) for layer in range(layers) for row in block]
    return names


def batch(dtype=np.float64):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, CONFIG.vocab_size, (2, 7))
    mask = np.ones((2, 7), np.int64)
    mask[1, 4:] = 0                                      # padding: its keys get probability exactly 0
    return dict(input_ids=ids, token_type_ids=rng.integers(0, 2, (2, 7)), attention_mask=mask,
                mlm_positions=np.array([1, 3, 8, 10]), mlm_labels=rng.integers(0, CONFIG.vocab_size, 4),
                nsp_labels=np.array([0, 1]))


def params(dtype=np.float64):
    p = init_params(CONFIG, np.random.default_rng(1), dtype)
    return {k: (v + 0.1 * np.random.default_rng(2).standard_normal(v.shape)).astype(dtype) for k, v in p.items()}


def traced(backend_name, dtype=np.float64):
    with backend.use_backend(backend_name):
        trace = Trace()
        out, cache = pretraining_forward(params(dtype), CONFIG, **batch(), trace=trace)
        grads = pretraining_backward(cache)
    return trace, out, grads


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
def test_every_documented_name_is_recorded_in_forward_order_with_its_gradient(backend_name):
    trace, _, _ = traced(backend_name)
    assert trace.names() == documented_names(CONFIG.num_hidden_layers)
    assert set(trace.backward) == set(trace.forward) - NO_GRADIENT
    assert trace["bert.encoder.layer.1.attention.self.probs"].shape == (2, 3, 7, 7)
    assert trace.grad("cls.predictions.logits").shape == (4, CONFIG.vocab_size)


def test_recorded_values_are_the_models_own():
    p, b = params(), batch()
    trace = Trace()
    (h, pooled), _ = bert_forward(p, CONFIG, b["input_ids"], b["token_type_ids"], b["attention_mask"], trace=trace)
    assert np.array_equal(trace["bert.encoder.layer.1"], h) and np.array_equal(trace["bert.pooler"], pooled)
    trace, out, _ = traced("numpy")
    for name, key in (("cls.predictions.logits", "mlm_logits"), ("cls.seq_relationship", "nsp_logits"),
                      ("loss", "loss")):
        assert np.array_equal(trace[name], out[key])
    probs = trace["bert.encoder.layer.0.attention.self.probs"]
    assert np.allclose(probs.sum(-1), 1.0) and np.all(probs[1, :, :, 4:] == 0.0)    # padded keys: exactly 0
    assert np.array_equal(probs, softmax_forward(trace["bert.encoder.layer.0.attention.self.scores"])[0])
    s = trace["bert.embeddings.word_embeddings"] + trace["bert.embeddings.token_type_embeddings"] + \
        trace["bert.embeddings.position_embeddings"]                                 # the code's order of adds
    assert np.array_equal(s, trace["bert.embeddings.sum"])


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
def test_tracing_changes_nothing(backend_name):
    with backend.use_backend(backend_name):
        out, cache = pretraining_forward(params(np.float32), CONFIG, **batch())
        grads = pretraining_backward(cache)
    _, traced_out, traced_grads = traced(backend_name, np.float32)
    assert float(out["loss"]) == float(traced_out["loss"])                            # same backend: to the bit
    assert all(np.array_equal(grads[k], traced_grads[k]) for k in grads)


def test_a_layers_gradient_is_the_derivative_of_the_loss():
    """d loss / d (layer 0's output), recorded by the backward, against central differences of
    the loss recomputed from layer 0's output on (float64)."""
    p, b = params(), batch()
    trace, _, _ = traced("numpy")
    padded = Padded(b["attention_mask"], np.float64)
    h0 = trace["bert.encoder.layer.0"].copy()

    def loss():
        h, _ = encoder_layer_forward(padded.rows_of(h0), padded, layer_params(p, 1), CONFIG, None)  # (N, H)
        mlm, _ = mlm_head_forward(h, b["mlm_positions"], p, CONFIG)          # the flat positions are h's rows
        nsp, _ = nsp_head_forward(pooler_forward(h[padded.cls_index()], p)[0], p)                   # [CLS] (B, H)
        return float(cross_entropy_forward(mlm, b["mlm_labels"])[0] + cross_entropy_forward(nsp, b["nsp_labels"])[0])
    numerical = numerical_gradient(loss, h0)
    assert np.abs(numerical - trace.grad("bert.encoder.layer.0")).max() < 1e-8 * max(np.abs(numerical).max(), 1)


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
def test_score_gradients_made_for_the_trace_agree_with_the_backward(backend_name):
    """The numba kernel never holds d scores; the trace makes it with the reference formula. It
    must be the gradient the kernel's backward used: dq = (dscores / sqrt(D)) k."""
    trace, _, _ = traced(backend_name)
    layer = "bert.encoder.layer.1.attention.self"
    k = split_heads(trace[layer + ".key"], CONFIG.num_attention_heads)
    dq = merge_heads(trace.grad(layer + ".scores") / np.sqrt(CONFIG.head_size) @ k)
    assert np.allclose(dq, trace.grad(layer + ".query"), rtol=1e-10, atol=1e-12)


def test_the_numba_trace_matches_the_reference():
    """float32 kernels against the float64 reference, each tensor to its own scale (the mask
    bias and the scores of padded keys are each dtype's finfo.min: compared where they are real)."""
    ref, _, _ = traced("numpy")
    got, _, _ = traced("numba", np.float32)
    real = batch()["attention_mask"][:, None, None, :].astype(bool)                  # (B, 1, 1, T)
    for values, expected in ((got.forward, ref.forward), (got.backward, ref.backward)):
        for name, want in expected.items():
            have = values[name]
            if name == "bert.mask_bias":
                continue
            if name.endswith(".scores") and values is got.forward:
                have, want = np.where(real, have, 0.0), np.where(real, want, 0.0)
            scale = max(float(np.abs(want).max()), 1e-30)
            assert np.abs(have - want).max() <= 1e-4 * scale, name


@pytest.mark.parametrize("kind, labels, head_names", [
    ("sequence_classification", dict(labels=np.array([0, 2])), ["classifier", "loss"]),
    ("token_classification", dict(labels=np.ones((2, 7), np.int64)), ["classifier", "loss"]),
    ("question_answering", dict(start_positions=np.array([1, 2]), end_positions=np.array([3, 2])), ["qa_outputs", "loss"]),
    ("multiple_choice", dict(labels=np.array([1, 0])), ["classifier", "logits", "loss"]),
])
def test_every_task_model_traces_its_head(kind, labels, head_names):
    p = {k: v for k, v in params().items() if k.startswith("bert.")}
    p.update(init_head(CONFIG, HEADS[kind], 3, np.random.default_rng(3), np.float64))
    b = {k: batch()[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    if kind == "multiple_choice":
        b = {k: np.stack([v, v[::-1]], axis=1) for k, v in b.items()}             # (B, C=2, T)
    forward, backward = model_of(CONFIG, HEADS[kind])
    for backend_name in ("numpy", "numba"):
        with backend.use_backend(backend_name):
            trace = Trace()
            out, cache = forward(p, CONFIG, **b, **labels, trace=trace)
            backward(1.0, cache)
        assert trace.names()[-len(head_names):] == head_names
        assert "bert.encoder.layer.1.attention.self.probs" in trace.forward
        assert set(trace.backward) == set(trace.forward) - NO_GRADIENT
