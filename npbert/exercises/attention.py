"""The attention core exercise: softmax(q k^T / sqrt(D) + mask_bias) v for every head, and its
backward (docs/layers/attention.md). Dropout is off here (p_drop 0, rng None); demo 05 has it."""
import math

import numpy as np

from npbert.exercises.diagnose import Mistake, Region
from npbert.exercises.grade import Exercise, gradients
from npbert.ops import attention_core_backward, attention_core_forward


def _run(f, t, c):
    return f[0](t["q"], t["k"], t["v"], t["mask_bias"], 0.0, None)


def _backward(f, dcontext, cache):
    return gradients("qkv", f[1](dcontext, cache))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _probs(t, scale=None, mask=True, axis=-1, on_queries=False):
    """The probabilities as a slip computes them."""
    q, k, bias = t["q"], t["k"], t["mask_bias"]
    scores = q @ k.swapaxes(-1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)   # (B, A, T, T)
    if mask:
        scores = scores + (bias[:, None, :, None] if on_queries else bias[:, None, None, :])
    with np.errstate(invalid="ignore", over="ignore"):
        return _softmax(scores, axis)


def _after_softmax(t):
    keep = (t["mask_bias"] == 0)[:, None, None, :]                                    # (B, 1, 1, T)
    return (_probs(t, mask=False) * keep) @ t["v"]


def _grads(t, scale_in_backward=True, transpose_dk=True, transpose_dv=True):
    """(dq, dk, dv) with one slip."""
    q, k, v, dc = t["q"], t["k"], t["v"], t["grad/out"]
    p = _probs(t)
    dv = (p.swapaxes(-1, -2) if transpose_dv else p) @ dc
    dp = dc @ v.swapaxes(-1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * (1 / math.sqrt(q.shape[-1]) if scale_in_backward else 1.0)
    return ds @ k, (ds.swapaxes(-1, -2) @ q if transpose_dk else ds @ q), dv


MISTAKES = (
    Mistake("out", lambda t: _probs(t, scale=1.0) @ t["v"], "the scores are not scaled: scores = q k^T / sqrt(D)"),
    Mistake("out", lambda t: _probs(t, scale=1 / t["q"].shape[-1]) @ t["v"], "the scores are divided by D, not by "
            "sqrt(D)"),
    Mistake("out", lambda t: _probs(t, mask=False) @ t["v"], "the mask is not applied: the padded keys get "
            "attention. Add mask_bias to the scores, before the softmax"),
    Mistake("out", _after_softmax, "the mask is applied after the softmax: the padded keys' probabilities are "
            "zeroed but the real keys' no longer sum to 1. Add mask_bias to the scores, before the softmax"),
    Mistake("out", lambda t: _probs(t, on_queries=True) @ t["v"], "the mask is added along the queries (rows): "
            "it masks keys, the last axis, mask_bias[:, None, None, :]"),
    Mistake("out", lambda t: _probs(t, axis=-2) @ t["v"], "the softmax runs over the queries (axis -2): each "
            "query's probabilities over the keys, the last axis, sum to 1"),
    Mistake("k", lambda t: _grads(t, transpose_dk=False)[1], "dk is computed as dscores q: dk = dscores^T q, since "
            "scores[i, j] = q_i . k_j makes key j collect over the queries i"),
    Mistake("v", lambda t: _grads(t, transpose_dv=False)[2], "dv is computed as probs dcontext: it is probs^T dcontext (value j "
            "is read by every query i with weight probs[i, j])"),
    Mistake("q", lambda t: _grads(t, scale_in_backward=False)[0], "the backward leaves out the 1/sqrt(D) the "
            "forward multiplied the scores by"),
    Mistake("k", lambda t: _grads(t, scale_in_backward=False)[1], "the backward leaves out the 1/sqrt(D) the "
            "forward multiplied the scores by"),
)


def _regions(t):
    padded = tuple(int(j) for j in np.flatnonzero((t["mask_bias"] != 0).any(axis=0)))
    sequences = tuple(int(b) for b in np.flatnonzero((t["mask_bias"] != 0).any(axis=1)))
    meaning = "the sequences with padding: is the mask applied the way the golden applies it?"
    return {name: [Region(0, sequences, meaning), Region(2, padded, "the padded positions")] for name in "qkv"} | {
        "out": [Region(0, sequences, meaning)]}


AXES = ("B", "A", "T", "D")
ATTENTION = Exercise(
    "attention", "docs/layers/attention.md", "attention_core", ("attention_core_forward", "attention_core_backward"),
    (attention_core_forward, attention_core_backward), _run, _backward, ("q", "k", "v"),
    axes={name: AXES for name in ("out", "q", "k", "v")}, mistakes=MISTAKES, regions=_regions,
    nonfinite="the mask value finfo.min reached the output: it is added to the scores, before the softmax, whose "
              "exp turns it into a probability of exactly 0 (added to the probabilities, it stays huge)")
