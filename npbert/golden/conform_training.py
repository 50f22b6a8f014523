"""Where a port's training steps first leave the golden ones: the first step, and in it the first
quantity in the order a step computes them (the learning rate, the loss, each gradient before
clipping, the global norm, each parameter's moments, each parameter after the update), then the
state after the last step. A guess at the cause is added where the port's value is what a known
bug gives, computed from the golden's own values of the step before (docs/porting.md lists them).
"""
from __future__ import annotations

import numpy as np

from npbert.optim import decays

WORD = "bert.embeddings.word_embeddings.weight"


def step_order(names, K: int) -> list:
    """[(step index or None for the final state, tensor name)] in the order a step computes them."""
    params = [n[len("trained/"):] for n in names if n.startswith("trained/")]
    per_step = ["lr", "loss"] + [f"steps/grad/{p}" for p in params] + ["grad_norm"] + \
        [f"steps/{m}/{p}" for p in params for m in ("m", "v")] + [f"steps/param/{p}" for p in params]
    final = [f"{kind}/{p}" for p in params for kind in ("trained", "m", "v")]
    names = set(names)
    return [(i, n) for i in range(K) for n in per_step if n in names] + [(None, n) for n in final if n in names]


def locate(entry: dict, golden: dict, results: dict, tol: float):
    """(name, where, detail) of the first quantity out of tolerance, or None if none is (or none can
    be compared: a missing, misshapen or mistyped tensor is a FAIL row of its own)."""
    floors = {t["name"]: t.get("floor", 0.0) for t in entry["tensors"]}
    if "lr" not in golden or golden["lr"].ndim != 1:
        return None                                    # not a training case as npbert writes one
    K = len(golden["lr"])
    for i, name in step_order(list(floors), K):
        want, got = golden[name], results.get(name)
        if got is None or np.shape(got) != want.shape or np.asarray(got).dtype != want.dtype or \
                (i is not None and (want.ndim == 0 or len(want) != K)):
            continue
        scale = max(float(np.max(np.abs(np.asarray(want, np.float64)), initial=0.0)), floors[name],
                    np.finfo(np.float64).tiny)
        w, g = (want, got) if i is None else (want[i], np.asarray(got)[i])
        err = float(np.max(np.abs(np.asarray(g, np.float64) - w), initial=0.0))
        if not err / scale <= tol:
            where = f"step {i + 1}" if i is not None else f"after step {K}"
            return name, where, describe(name, w, g, err, scale) + hint(entry, golden, name, i, g, scale, tol)
    return None


def describe(name, want, got, err, scale) -> str:
    what = {"lr": "learning rate", "loss": "loss", "grad_norm": "gradient norm before clipping"}.get(name)
    if what:
        return f"{what} {float(got):.6g}, expected {float(want):.6g}"
    return f"max abs error {err:.2g} (relative {err / scale:.2g})"


def hint(entry, golden, name, i, got, scale, tol) -> str:
    """A known bug's value at step i that the port's equals, as a question (or ""). A golden that
    lacks what a guess needs (edited by hand) gets no guess, never an error."""
    try:
        return _hint(entry, golden, name, i, got, scale, tol)
    except (KeyError, IndexError, TypeError, ValueError):
        return ""


def _hint(entry, golden, name, i, got, scale, tol) -> str:
    if i is None:
        return ""
    c, K = entry["constants"], len(golden["lr"])

    def near(value):
        return float(np.max(np.abs(np.asarray(got, np.float64) - value), initial=0.0)) <= tol * scale
    if name == "lr":
        return "; one step late?" if i + 1 < K and near(golden["lr"][i + 1]) else \
            "; one step early?" if i > 0 and near(golden["lr"][i - 1]) else "; check the schedule"
    if name == "loss" and isinstance(c.get("dropout"), dict):
        return _dropout_hint(i)
    if name == "grad_norm":
        return "; the norm after clipping? (record it before)" if near(min(golden[name][i], c["max_grad_norm"])) else ""
    kind, param = name.split("/", 2)[1:] if name.startswith("steps/") else (None, None)
    if kind == "grad" and param == WORD:
        return _word_table_hint(golden[name][i], got, entry, tol * scale)
    if kind == "m":
        return _moment_hint(c, golden, param, i, near)
    if kind == "param":
        return _update_hint(c, golden, param, i, near)
    return ""


def _dropout_hint(i) -> str:
    """A loss off in a case with dropout on, before any gradient: the dropout, most likely. At a later
    step than the first, the steps before drew theirs right: the step's part of the key is the suspect."""
    if i:
        return ("; the steps before match: is step s's dropout keyed by s itself (call k: "
                "splitmix64(splitmix64(dropout_seed, s), k), s = updates done before it)?")
    return ("; dropout on: the case bert_for_pretraining[dropout] names the first intermediate a wrong call order, "
            "key or index reaches (its constants.dropout.calls)")


def _previous_param(golden, param, i):
    """The parameter before update i: the golden's initial value, or its value after update i - 1."""
    return golden[f"steps/param/{param}"][i - 1] if i else golden[param]


def _moment_hint(c, golden, param, i, near) -> str:
    """The first moment after step i as Adam with L2 in the gradient, or a gradient clipped otherwise,
    would make it."""
    b1, wd = c["betas"][0], c["weight_decay"]
    p_prev = np.asarray(_previous_param(golden, param, i), np.float64)
    if near(golden[f"steps/m/{param}"][i] + (1 - b1) * wd * p_prev):
        return ("; the moments differ by exactly (1 - b1) * wd * p: weight decay added to the gradient (L2, as "
                "torch.optim.Adam(weight_decay=...) does)? AdamW decays the parameter, outside the moments")
    if golden["grad_norm"][i] <= c["max_grad_norm"]:
        return ""
    norm, max_norm = float(golden["grad_norm"][i]), c["max_grad_norm"]
    m_prev = golden[f"steps/m/{param}"][i - 1] if i else 0.0
    g = np.asarray(golden[f"steps/grad/{param}"][i], np.float64)
    if near(b1 * m_prev + (1 - b1) * g):
        return "; not clipped (or clipped after the update)?"
    if near(b1 * m_prev + (1 - b1) * g * (max_norm / (norm + 1e-6))):
        return ("; clipped by max_norm / (norm + 1e-6), as torch.nn.utils.clip_grad_norm_ does? the goldens scale "
                "by max_norm / norm (TensorFlow's clip_by_global_norm)")
    return ""


def _word_table_hint(want, got, entry, limit) -> str:
    """Which rows of the word table's gradient are out of tolerance (`limit`, in the units of the
    table): only row pad_token_id is the padding_idx bug, whatever rounding the other rows carry."""
    pad = entry["constants"]["pad_token_id"]
    row_error = np.max(np.abs(np.asarray(got, np.float64) - want), axis=1)
    rows = np.flatnonzero(~(row_error <= limit))                      # NaN counts as out
    if len(rows) and set(rows) == {pad}:
        return "; only the [PAD] row differs: the lookup must give row pad_token_id no gradient (padding_idx)"
    if any(t["name"].startswith("trained/cls.predictions") for t in entry["tensors"]):
        return "; the tied MLM decoder's share of this table's gradient?"
    return ""


def _update_hint(c, golden, param, i, near) -> str:
    """The parameter after step i as the golden's moments give it with decay wrongly applied or the
    other bias-correction setting."""
    p_prev = _previous_param(golden, param, i)
    lr = float(golden["lr"][i])
    if not decays(param) and near(golden[f"steps/param/{param}"][i] - lr * c["weight_decay"] * p_prev):
        return "; moved by weight decay: decayed? (LayerNorm parameters and biases take none)"
    if f"steps/m/{param}" not in golden:
        return ""
    b1, b2 = c["betas"]
    t = i + 1
    c1, c2 = (1.0, 1.0) if c["bias_correction"] else (1 - b1 ** t, 1 - b2 ** t)    # the other setting
    m, v = golden[f"steps/m/{param}"][i], golden[f"steps/v/{param}"][i]
    wd = c["weight_decay"] if decays(param) else 0.0
    other = p_prev - lr * ((m / c1) / (np.sqrt(v / c2) + c["eps"]) + wd * p_prev)
    if near(other):
        return "; no bias correction?" if c["bias_correction"] else "; bias correction applied? (this case has none)"
    return ""

