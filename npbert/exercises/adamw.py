"""The AdamW exercise: one update of one parameter tensor, in place, as npbert.ops.adamw_update
(docs/pretraining.md, "AdamW, one update written out"). Graded on the golden training steps: every parameter of the
golden pretraining model at each of its 5 steps, with bias correction on and then off, given the
golden gradient (clipped as the step clips it), moments and learning rate; m, v and p are compared
after the call, in that order."""
from __future__ import annotations

import numpy as np

from npbert.exercises.diagnose import Finding, Mistake, compare
from npbert.exercises.grade import Exercise, Report, attempt, failed
from npbert.golden.schema import TOLERANCE
from npbert.golden.training import training_case_name, training_cases
from npbert.ops import adamw_update
from npbert.optim import decays


def _update(p, g, m, v, lr, b1, b2, eps, c1, c2, wd, slip=""):
    """(p, m, v) after one update with one slip (the classic ones), from copies."""
    m = b1 * m + (1 - b1) * (g + wd * p if slip == "l2" else g)
    v = b2 * v + (1 - b2) * ((g + wd * p if slip == "l2" else g) ** 2 if slip != "v_not_squared" else g)
    c1, c2 = (1.0, 1.0) if slip == "no_correction" else (1 / c1, 1 / c2) if slip == "times" else (c1, c2)
    denom = np.sqrt(v / c2 + eps) if slip == "eps_inside" else np.sqrt(v) / np.sqrt(c2) + eps
    decayed = p * (1 - (wd if slip == "decay_without_lr" else lr * wd)) if slip not in ("l2", "decay_after") else p
    p = decayed - lr / c1 * m / denom
    return p * (1 - lr * wd) if slip == "decay_after" else p, m, v


LABELS = {"m": "m, the first moment", "v": "v, the second moment", "param": "p, the parameter"}
SLIPS = {
    "no_correction": "c1 and c2 are not used: the bias corrections divide, m / c1 and sqrt(v / c2) (they are "
                     "1 when bias correction is off)",
    "times": "m is multiplied by c1 (and v by c2): they divide, m_hat = m / c1, v_hat = v / c2",
    "eps_inside": "eps is added inside the square root: it goes outside, sqrt(v_hat) + eps",
    "l2": "the weight decay is added to the gradient (Adam with L2, which m and v then rescale): AdamW decays the "
          "parameter itself, p *= 1 - lr * weight_decay, apart from the Adam step",
    "decay_without_lr": "the decay is p *= 1 - weight_decay: it is scaled by the learning rate, 1 - lr * weight_decay",
    "decay_after": "the decay is applied after the Adam step: AdamW (as torch.optim.AdamW) decays p first",
    "v_not_squared": "v averages g, not g squared: v = b2 v + (1 - b2) g^2",
}


def golden_steps(bias_correction: bool):
    """The golden pretraining case's tensors and constants for one bias-correction setting."""
    name = training_case_name("pretraining", bias_correction)
    case = next(c for c in training_cases(dtypes=("float64",)) if c.name == name)
    return {k: v for k, (role, v) in case.tensors.items()}, case.constants


def one_step(update, t, c, k, i):
    """Step i of parameter k with the learner's update: -> (the inputs, {m, v, param after}, or a Finding)."""
    b1, b2 = c["betas"]
    corrected = (1 - b1 ** (i + 1), 1 - b2 ** (i + 1)) if c["bias_correction"] else (1.0, 1.0)
    norm = float(t["grad_norm"][i])
    g = t[f"steps/grad/{k}"][i] * (c["max_grad_norm"] / norm if norm > c["max_grad_norm"] else 1.0)
    prev = {"p": t[f"steps/param/{k}"][i - 1] if i else t[k], "m": t[f"steps/m/{k}"][i - 1] if i else 0 * g,
            "v": t[f"steps/v/{k}"][i - 1] if i else 0 * g}
    args = (float(t["lr"][i]), b1, b2, c["eps"], *corrected, c["weight_decay"] if decays(k) else 0.0)
    p, m, v = (prev[n].copy() for n in "pmv")
    _, _, finding = attempt(lambda: (update(p, g, m, v, *args), None), "adamw_update")
    return (prev["p"], g, prev["m"], prev["v"], *args), {"m": m, "v": v, "param": p}, finding


def first_wrong(update, bias_correction: bool) -> Finding | None:
    t, c = golden_steps(bias_correction)
    names = [k[len("steps/m/"):] for k in t if k.startswith("steps/m/")]
    for i in range(c["steps"]):
        for k in names:
            inputs, after, finding = one_step(update, t, c, k, i)
            for n in ("m", "v", "param") if finding is None else ():
                before = inputs[0] if n == "param" else inputs[2 if n == "m" else 3]
                if np.array_equal(after[n], before) and not np.array_equal(t[f"steps/{n}/{k}"][i], before):
                    finding = Finding(LABELS[n] + " is not updated", (f"it is unchanged after the call: {n} must be updated in place "
                                               f"({n} *= ..., {n} += ..., or {n}[...] = ...); `{n} = ...` makes a new "
                                               "array the caller never sees",))
                    break
                mistakes = tuple(Mistake(n, lambda _, s=s: _update(*inputs, slip=s)[("param", "m", "v").index(n)],
                                         says) for s, says in SLIPS.items())
                finding = compare(n, after[n], t[f"steps/{n}/{k}"][i], TOLERANCE["float64"], (), mistakes, {},
                                  label=LABELS[n])
                if finding:
                    break
            if finding:
                where = f"at step {i + 1} of 5 (bias correction {'on' if bias_correction else 'off'}), for {k}"
                return finding._replace(what=f"{finding.what} {where}")
    return None


def grade_adamw(functions) -> Report:
    for bias_correction in (True, False):
        with np.errstate(all="ignore"):
            finding = first_wrong(functions[0], bias_correction)
        if finding:
            return failed(ADAMW, "adamw_update", finding)
    return Report("adamw", True, ["adamw: all checks passed.", "  - m, v and every parameter after each of the 5 "
                                  "golden training steps, with bias correction on and off, weight decay where it "
                                  "applies, clipped gradients: the golden ones to 1e-10 (relative)"])


ADAMW = Exercise("adamw", 'docs/pretraining.md, "AdamW, one update written out"', "train[pretraining,bias_correction]", ("adamw_update",),
                 (adamw_update,), None, None, ())
