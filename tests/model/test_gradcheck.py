"""Every hand-written backward against central finite differences in float64, for random
shapes, head counts, padding masks and dropout (hypothesis), plus proof the checker can fail."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npbert import ops
from npbert.cli import main
from npbert.errors import NpbertError
from npbert.gradcheck import (TOL, Dims, check, numerical_gradient, op_cases, relative_error, run_gradchecks,
                               select_checks)

OPS = list(op_cases(Dims()))


@st.composite
def dims(draw, small=False):
    B = draw(st.integers(1, 3))
    T = draw(st.integers(1, 4 if small else 6))
    return Dims(B=B, T=T, heads=draw(st.integers(1, 3)), head_size=draw(st.integers(1, 3 if small else 4)),
                I=draw(st.integers(1, 5 if small else 8)), V=draw(st.integers(2, 7 if small else 12)),
                layers=draw(st.integers(1, 2)), hidden_act=draw(st.sampled_from(["gelu", "gelu_new"])),
                dropout=draw(st.sampled_from([0.0, 0.25])),
                lengths=tuple(draw(st.lists(st.integers(1, T), min_size=B, max_size=B))),
                seed=draw(st.integers(0, 2**16)))


WHOLE_MODELS = ["bert_for_pretraining", "bert_for_pretraining[packed]", "bert_model[packed, read rows]"]   # below


@pytest.mark.parametrize("name", [n for n in OPS if n not in WHOLE_MODELS])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=dims())
def test_op_gradient(name, d):
    r = run_gradchecks(d, names=[name])[0]
    assert r.passed, f"{name} {d}: {r.errors}"


@pytest.mark.parametrize("name", WHOLE_MODELS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=dims(small=True))
def test_whole_pretraining_model_gradient(name, d):
    r = run_gradchecks(d, names=[name])[0]
    assert set(r.errors) == set(op_cases(d)[name].inputs), "every parameter is checked"
    assert r.passed, f"{d}: { {k: v for k, v in r.errors.items() if v >= TOL} }"


COMPOSITES = ["self_attention", "feedforward", "encoder_layer", "encoder", "bert_embeddings", "pooler", "mlm_head",
              "nsp_head", "classifier", "qa_head", "span_loss", "scalar_mix",
              "sequence_head", "token_head", "span_head", "choice_head"]
LAYOUTS = ["self_attention", "encoder_layer", "encoder", "bert_embeddings"]   # each on both layouts


# the models that run a head (over BertModel, or over frozen features): checked whole, as every
# head's bert_for_<name> and feature_based[<name>] rows
WHOLE_MODEL_MODULES = {"npbert.heads.task_model", "npbert.heads.feature_based"}


def test_every_layer_has_a_gradient_check():
    """Each *_forward of npbert/ops, npbert/layers and npbert/heads is a row of the checker (its
    name, or its name with [variants]), so test_op_gradient above checks it for random shapes and
    masks: a layer or head added without a case, or a case dropped, fails here. The composite
    layers and the heads by name."""
    import importlib
    import inspect
    import pkgutil

    import npbert.heads
    import npbert.layers
    import npbert.ops
    forwards = []
    for package in (npbert.ops, npbert.layers, npbert.heads):
        for info in pkgutil.iter_modules(package.__path__):
            if f"{package.__name__}.{info.name}" in WHOLE_MODEL_MODULES:
                continue
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            forwards += [name[:-len("_forward")] for name, f in inspect.getmembers(module, inspect.isfunction)
                         if name.endswith("_forward") and f.__module__ == module.__name__]
    unchecked = [f for f in forwards if not any(op == f or op.startswith(f + "[") for op in OPS)]
    assert not unchecked, f"layers without a gradient check: {unchecked}"
    assert set(COMPOSITES) <= set(forwards) and all(any(op == c or op.startswith(c + "[") for op in OPS) for c in COMPOSITES)
    assert all(c in OPS and any(op.startswith(c + "[packed") for op in OPS) for c in LAYOUTS), "padded and packed"


def test_every_op_passes_at_default_sizes_with_dropout_and_padding():
    results = run_gradchecks(Dims(dropout=0.1, lengths=(3, 5)))
    assert [r.name for r in results] == OPS
    bad = {r.name: r.max_error for r in results if not r.passed}
    assert not bad and max(r.max_error for r in results) < 1e-7


def test_checker_catches_a_wrong_backward():
    # a backward that is wrong by 1% in one weight must fail; a right one must pass
    d = Dims()
    inputs, run, backward = op_cases(d)["linear"][:3]

    def wrong(dy, cache):
        g = backward(dy, cache)
        g["w"] = g["w"] * 1.01
        return g
    assert check("linear", inputs, run, backward).passed
    bad = check("linear", inputs, run, wrong)
    assert not bad.passed and bad.errors["w"] > 1e-3 and bad.errors["x"] < TOL


def test_checker_catches_a_single_wrong_element():
    inputs, run, backward = op_cases(Dims())["layernorm"][:3]

    def wrong(dy, cache):
        g = backward(dy, cache)
        g["gamma"] = g["gamma"].copy()
        g["gamma"][0] += 1e-4
        return g
    assert not check("layernorm", inputs, run, wrong).passed


def test_numerical_gradient_of_a_known_function():
    x = np.array([[0.5, -1.0], [2.0, 3.0]])
    g = numerical_gradient(lambda: float(np.sum(np.sin(x) * x)), x)
    assert relative_error(g, np.cos(x) * x + np.sin(x)) < 1e-9


def test_dropout_zeroes_and_scales_and_is_identity_in_eval():
    x = np.ones((200, 50))
    y, mask = ops.dropout_forward(x, 0.2, np.random.default_rng(0))
    assert set(np.unique(y)) == {0.0, 1.25}
    assert abs((y == 0).mean() - 0.2) < 0.01
    y_eval, cache = ops.dropout_forward(x, 0.2, None)
    assert y_eval is x and cache.keep is None


# --- choosing checks: `npbert gradcheck --only` ----------------------------------------------------------

def test_select_checks_by_name_variant_or_pattern_never_a_plain_prefix():
    assert select_checks(OPS, ["layernorm"]) == ["layernorm"]
    assert select_checks(OPS, ["gelu"]) == ["gelu[gelu]", "gelu[gelu_new]"]           # every variant
    assert select_checks(OPS, ["gelu[gelu_new]"]) == ["gelu[gelu_new]"]               # "[" is not a pattern
    assert select_checks(OPS, ["linear"]) == ["linear"]                               # not linear_gelu
    assert select_checks(OPS, ["bert_for_*", "linear"]) == ["linear"] + [n for n in OPS if n.startswith("bert_for_")]
    with pytest.raises(NpbertError, match=r"no gradient check is named 'bert_for'; the names are linear, "):
        select_checks(OPS, ["bert_for"])


def test_the_command_refuses_unknown_names_and_says_which_backend_ran(capsys):
    # before: --only foo ran nothing and printed "all passed" (exit 0); --only gelu matched nothing
    assert main(["gradcheck", "--only", "foo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("npbert gradcheck: error: no gradient check is named 'foo'; the names are ") and \
        all(name in err for name in OPS)
    assert main(["gradcheck", "--backend", "numpy", "--only", "gelu"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "; backend numpy;" in out[0]
    assert [line.split()[0] for line in out[2:-1]] == ["gelu[gelu]", "gelu[gelu_new]"] and out[-1] == "all passed"
