"""The softmax and cross-entropy exercises (docs/layers/softmax.md, docs/layers/cross_entropy.md):
softmax over the last axis and its row-wise backward; the mean cross-entropy over the rows whose
label is not -100 and its gradient (softmax - onehot) / n. Their probes hold scores of 1000, where
an exp without the row's maximum subtracted overflows."""
import numpy as np

from npbert.exercises.diagnose import Mistake, Region, compare
from npbert.exercises.grade import Exercise, attempt
from npbert.ops import IGNORE_INDEX, cross_entropy_backward, cross_entropy_forward, softmax_backward, softmax_forward


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


SOFTMAX_MISTAKES = (
    Mistake("out", lambda t: _softmax(t["x"], axis=-2), "it normalises over axis -2: each row (the last axis) "
            "must sum to 1"),
    Mistake("out", lambda t: np.exp(t["x"]) / np.exp(t["x"]).sum(), "it normalises over the whole array: each row "
            "(the last axis) sums to 1 on its own"),
    Mistake("x", lambda t: _softmax(t["x"]) * (t["grad/out"] - t["grad/out"].sum(-1, keepdims=True)),
            "the sum is sum(dy) where the formula has sum(dy * y): "
            "dx = y * (dy - sum(dy * y))"),
    Mistake("x", lambda t: _softmax(t["x"]) * (1 - _softmax(t["x"])) * t["grad/out"], "only the Jacobian's "
            "diagonal is used, y (1 - y): every output of a row depends on every input, dx = y * (dy - sum(dy * y))"),
    Mistake("x", lambda t: _softmax(t["x"]) * (t["grad/out"] - (t["grad/out"] * _softmax(t["x"])).sum()),
            "the sum of dy * y runs over the whole array: it is one sum per row, over the last axis"),
)


def large_scores(f):
    """Scores of 1000: no overflow"""
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 3.0]])                   # (2, 3)
    y, _, finding = attempt(lambda: f[0](x), "softmax_forward")
    with np.errstate(all="ignore"):
        finding = finding or compare("out", y, softmax_forward(x)[0], 1e-10, ("row", "entry"))
    if finding:
        return finding._replace(what=finding.what + " for scores of 1000", lines=finding.lines + (
            "exp(1000) overflows: subtract each row's maximum first (softmax ignores a constant added to a row)",))
    return None


SOFTMAX = Exercise(
    "softmax", "docs/layers/softmax.md", "softmax", ("softmax_forward", "softmax_backward"),
    (softmax_forward, softmax_backward), lambda f, t, c: f[0](t["x"]), lambda f, dy, c: {"x": f[1](dy, c)}, ("x",),
    axes={"out": ("B", "A", "T", "keys"), "x": ("B", "A", "T", "keys")}, mistakes=SOFTMAX_MISTAKES,
    probes=(large_scores,))


def _ce_parts(t):
    """softmax of the logits, the one-hot labels, the counted rows."""
    logits, labels = t["logits"], t["labels"]
    counted = labels != IGNORE_INDEX                                                   # (N,)
    onehot = np.zeros_like(logits)
    onehot[np.flatnonzero(counted), labels[counted]] = 1.0
    return _softmax(logits), onehot, counted


def _ce_grad(t, n=None, zero_ignored=True, sign=1.0):
    p, onehot, counted = _ce_parts(t)
    g = sign * (p - onehot) / (counted.sum() if n is None else n)
    return g * counted[:, None] if zero_ignored else g


def _ce_loss(t, over_all_rows=False):
    p, onehot, counted = _ce_parts(t)
    losses = -np.log((p * onehot).sum(-1))                                            # inf where not counted
    return losses[counted].sum() / (len(counted) if over_all_rows else counted.sum())


CE_MISTAKES = (
    Mistake("out", lambda t: _ce_loss(t, over_all_rows=True), "the mean divides by every row (21): the rows "
            "labelled -100 do not count, n is the number of counted rows (14)"),
    Mistake("out", lambda t: _ce_loss(t) * (t["labels"] != IGNORE_INDEX).sum(), "it is the sum over the counted "
            "rows: the loss is their mean"),
    Mistake("logits", lambda t: _ce_grad(t, n=1), "the 1/n of the mean is missing: dlogits = (softmax - onehot) / n"),
    Mistake("logits", lambda t: _ce_grad(t, n=len(t["labels"])), "the gradient is divided by every row (21), not by "
            "the n = 14 counted ones"),
    Mistake("logits", lambda t: _ce_grad(t, zero_ignored=False), "the rows labelled -100 get a gradient: they "
            "are not in the loss, so theirs is 0"),
    Mistake("logits", lambda t: _ce_grad(t, sign=-1.0), "the sign is flipped, onehot - softmax: it is softmax - "
            "onehot"),
)


def _ce_regions(t):
    ignored = tuple(int(i) for i in np.flatnonzero(t["labels"] == IGNORE_INDEX))
    return {"logits": [Region(0, ignored, "the rows labelled -100 (ignore_index): their gradient is 0")]}


def large_logits(f):
    """Logits of 1000: no overflow"""
    logits, labels = np.array([[1000.0, 0.0, -3.0], [2.0, 1002.0, 1000.0]]), np.array([0, 2])
    loss, _, finding = attempt(lambda: f[0](logits, labels), "cross_entropy_forward")
    with np.errstate(all="ignore"):
        finding = finding or compare("out", loss, cross_entropy_forward(logits, labels)[0], 1e-10)
    if finding:
        return finding._replace(what=finding.what + " for logits of 1000", lines=finding.lines + (
            "exp(1000) overflows: subtract each row's maximum first (log softmax(z) = z - max - log sum exp(z - max))",))
    return None


CROSS_ENTROPY = Exercise(
    "cross_entropy", "docs/layers/cross_entropy.md", "cross_entropy", ("cross_entropy_forward",
                                                                        "cross_entropy_backward"),
    (cross_entropy_forward, cross_entropy_backward), lambda f, t, c: f[0](t["logits"], t["labels"]),
    lambda f, dloss, c: {"logits": f[1](dloss, c)}, ("logits",), axes={"logits": ("N", "C")},
    mistakes=CE_MISTAKES, probes=(large_logits,), regions=_ce_regions)
