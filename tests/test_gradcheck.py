"""Every hand-written backward against central finite differences in float64, for random
shapes, head counts, padding masks and dropout (hypothesis), plus proof the checker can fail."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npbert import ops
from npbert.gradcheck import TOL, Dims, check, numerical_gradient, op_cases, relative_error, run_gradchecks

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


@pytest.mark.parametrize("name", [n for n in OPS if n != "bert_for_pretraining"])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=dims())
def test_op_gradient(name, d):
    r = run_gradchecks(d, names=[name])[0]
    assert r.passed, f"{name} {d}: {r.errors}"


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=dims(small=True))
def test_whole_pretraining_model_gradient(d):
    r = run_gradchecks(d, names=["bert_for_pretraining"])[0]
    assert set(r.errors) == set(op_cases(d)["bert_for_pretraining"][0]), "every parameter is checked"
    assert r.passed, f"{d}: { {k: v for k, v in r.errors.items() if v >= TOL} }"


def test_every_op_passes_at_default_sizes_with_dropout_and_padding():
    results = run_gradchecks(Dims(dropout=0.1, lengths=(3, 5)))
    assert [r.name for r in results] == OPS
    bad = {r.name: r.max_error for r in results if not r.passed}
    assert not bad and max(r.max_error for r in results) < 1e-7


def test_checker_catches_a_wrong_backward():
    # a backward that is wrong by 1% in one weight must fail; a right one must pass
    d = Dims()
    inputs, run, backward, _ = op_cases(d)["linear"]

    def wrong(dy, cache):
        g = backward(dy, cache)
        g["w"] = g["w"] * 1.01
        return g
    assert check("linear", inputs, run, backward).passed
    bad = check("linear", inputs, run, wrong)
    assert not bad.passed and bad.errors["w"] > 1e-3 and bad.errors["x"] < TOL


def test_checker_catches_a_single_wrong_element():
    inputs, run, backward, _ = op_cases(Dims())["layernorm"]

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
