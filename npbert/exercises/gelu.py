"""The GELU exercise: the exact form, x Phi(x), and its derivative (docs/layers/gelu.md)."""
import math

import numpy as np

from npbert.exercises.diagnose import Mistake
from npbert.exercises.grade import Exercise
from npbert.ops import gelu_backward, gelu_forward
from npbert.ops.erf import erf


def _run(f, t, c):
    return f[0](t["x"], c["hidden_act"])


def _backward(f, dy, cache):
    return {"x": f[1](dy, cache)}


def _cdf(x):
    return 0.5 * (1.0 + erf(x / math.sqrt(2.0)))


def _pdf(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _tanh_form(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


MISTAKES = (
    Mistake("out", lambda t: _tanh_form(t["x"]), "it is the tanh approximation (hidden_act \"gelu_new\"); BERT's "
            "\"gelu\" is exact: x / 2 (1 + erf(x / sqrt 2))"),
    Mistake("out", lambda t: t["x"] / (1.0 + np.exp(-1.702 * t["x"])), "it is the sigmoid approximation x "
            "sigmoid(1.702 x); BERT's \"gelu\" is exact: x / 2 (1 + erf(x / sqrt 2))"),
    Mistake("out", lambda t: np.maximum(t["x"], 0.0), "it is ReLU, max(x, 0): GELU is x Phi(x)"),
    Mistake("out", lambda t: 0.5 * t["x"] * (1.0 + erf(t["x"])), "erf is taken of x where the formula has x / sqrt 2: "
            "Phi(x) = (1 + erf(x / sqrt 2)) / 2"),
    Mistake("x", lambda t: t["grad/out"] * _cdf(t["x"]), "the derivative is Phi(x) alone: the product rule on x Phi(x) "
            "adds x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)"),
    Mistake("x", lambda t: t["grad/out"] * (_cdf(t["x"]) + t["x"] * np.exp(-0.5 * t["x"] ** 2)),
            "phi(x) lacks its 1 / sqrt(2 pi): phi(x) = exp(-x^2 / 2) / sqrt(2 pi)"),
    Mistake("x", lambda t: _cdf(t["x"]) + t["x"] * _pdf(t["x"]), "it is gelu'(x) alone: the chain rule multiplies "
            "it by the upstream gradient, dx = dy * gelu'(x)"),
    Mistake("x", lambda t: t["grad/out"] * 0.5 * t["x"] * (1.0 + erf(t["x"] / math.sqrt(2.0))),
            "it is dy * gelu(x), the forward's value: the backward needs the derivative gelu'(x) = Phi(x) + x phi(x)"),
)

GELU = Exercise(
    "gelu", "docs/layers/gelu.md", "gelu[gelu]", ("gelu_forward", "gelu_backward"), (gelu_forward, gelu_backward),
    _run, _backward, ("x",), axes={"out": ("B", "T", "I"), "x": ("B", "T", "I")}, mistakes=MISTAKES)
