"""The linear layer exercise: y = x W^T + b with W stored (out, in) (docs/layers/linear.md)."""
import numpy as np

from npbert.exercises.diagnose import Mistake
from npbert.exercises.grade import Exercise, gradients
from npbert.ops import linear_backward, linear_forward


def _run(f, t, c):
    return f[0](t["x"], t["w"], t["b"])


def _backward(f, dy, cache):
    return gradients(("x", "w", "b"), f[1](dy, cache))


def _rows(t):
    return t["x"].reshape(-1, t["x"].shape[-1]), t["grad/out"].reshape(-1, t["w"].shape[0])   # (N, in), (N, out)


MISTAKES = (
    Mistake("out", lambda t: t["x"] @ t["w"].T, "the bias b is not added"),
    Mistake("out", lambda t: t["x"] @ t["w"].T - t["b"], "the bias is subtracted: y = x W^T + b"),
    Mistake("w", lambda t: _rows(t)[1].T @ _rows(t)[0] / len(_rows(t)[0]),
            "dW is averaged over the rows: the loss's own mean is already in dy, so dW = dy^T x sums them"),
    Mistake("b", lambda t: _rows(t)[1].mean(axis=0),
            "db is averaged over the rows: db = dy summed over every row, not its mean"),
    Mistake("w", lambda t: t["grad/out"][-1].T @ t["x"][-1],
            "dW holds only the last sequence's contribution: each sequence's dy^T x must be added, not assigned"),
)

LINEAR = Exercise(
    "linear", "docs/layers/linear.md", "linear", ("linear_forward", "linear_backward"),
    (linear_forward, linear_backward), _run, _backward, ("x", "w", "b"),
    axes={"out": ("B", "T", "out"), "x": ("B", "T", "in"), "w": ("out", "in"), "b": ("out",)},
    mistakes=MISTAKES)
