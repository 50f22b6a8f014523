"""What is wrong with one tensor a learner's function returned, in words: compared with the golden
one, and when it differs, why it probably does.

The known mistakes of an exercise come first (each is the tensor a classic slip produces, computed
from the same inputs: when the learner's equals one of them, that is the cause). Then the shape of
the error itself: a shape that is the transpose or lacks a summed axis, NaN, all zeros, a constant
factor (which size it is: a missing 1/H), an error the same along an axis (a term shared by a whole
row), an error confined to some rows (the padded ones, the ignored ones), and the first entry off.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from npbert.golden.schema import tensor_error

MATCH = 1e-8                     # a learner's tensor within this of a mistake's (relative to its scale) is it


class Mistake(NamedTuple):
    tensor: str                  # which result it shows in: "out", "x" (the gradient of x), ...
    value: Callable              # golden tensors (name -> array) -> the tensor the slip produces
    says: str                    # the likely cause, in a student's words


class Region(NamedTuple):
    axis: int                    # an axis of the tensor ...
    index: tuple                 # ... and the indices along it that make up the region
    means: str                   # what they are: "the rows whose label is -100"


class Finding(NamedTuple):
    what: str                    # the headline: "dx, the gradient of x, shape (3, 7, 10) (B, T, H), is wrong"
    lines: tuple                 # what is wrong and the likely cause, most useful first


def describe(name: str, shape, axes=()) -> str:
    """'dx, the gradient of x, shape (3, 7, 10) (B, T, H)' or 'the output, shape ...'."""
    what = "the output" if name == "out" else f"d{name}, the gradient of {name}"
    return f"{what}, shape {tuple(shape)}" + (f" ({', '.join(axes)})" if axes else "")


def compare(name, got, want, tol, axes=(), mistakes=(), tensors=None, regions=(), floor=0.0,
            label=None, nonfinite="") -> Finding | None:
    """None when got is the golden `want` within tol (golden's own measure: max |got - want| over
    max |want|, or over `floor` for a gradient that is 0 in exact arithmetic); else what is wrong with
    it. label: what the tensor is, when it is neither the output nor a gradient; nonfinite: the
    exercise's likely cause of NaN or inf."""
    what = (f"{label}, shape {np.shape(want)}" if label else describe(name, np.shape(want), axes)) + ", is wrong"
    if got is None:
        return Finding(what, ("your function returned None for it",))
    if isinstance(got, tuple):                         # return dx, None: a slip, not an array
        return Finding(what, (f"it is a tuple of {len(got)} values, not an array: " + (
            "a forward returns (output, cache)" if name == "out" else f"a backward returns one gradient per input, "
            f"d{name} an array of its own") + "; is there an extra value in the return?",))
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return Finding(what, (f"it is a {type(got).__name__}, not an array of numbers",))
    if got.shape != np.shape(want):
        return Finding(what, (shape_says(got.shape, np.shape(want), axes),))
    if not np.isfinite(got).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(got))[0])
        return Finding(what, (f"it has {np.count_nonzero(~np.isfinite(got))} NaN or infinite entries, the first at "
                              f"{list(bad)}: " + (nonfinite or "an overflow (exp of a large number?) or a division "
                                                  "by zero?"),))
    if tensor_error(got, want, floor)[1] <= tol:
        return None
    return Finding(what, tuple(value_says(got, np.asarray(want, np.float64), axes, mistakes, tensors, regions)))


def shape_says(got, want, axes) -> str:
    named = f" ({', '.join(axes)})" if axes else ""
    if len(got) == len(want) == 2 and got == want[::-1]:
        return (f"its shape is {got}, the transpose of {want}{named}: a weight is stored (out, in), so "
                "its gradient is too (dW = dy^T x, not x^T dy)")
    extra = len(got) - len(want)
    if extra > 0 and got[extra:] == want:
        return (f"its shape is {got}, not {want}{named}: it is not summed over the leading axes {got[:extra]}; a "
                "parameter's gradient adds up the contributions of every row (sum over all leading axes)")
    if math.prod(got) == math.prod(want):
        return f"its shape is {got}, not {want}{named}: the right number of entries in the wrong arrangement"
    return f"its shape is {got}, not {want}{named}"


def value_says(got, want, axes, mistakes, tensors, regions) -> list:
    scale = max(float(np.max(np.abs(want), initial=0.0)), np.finfo(np.float64).tiny)
    lines = [f"its largest error is {np.max(np.abs(got - want)):.3g}, on entries of size up to {scale:.3g}"]
    known = [m.says for m in mistakes if _equals(got, m.value(tensors))]
    lines += [f"it is exactly what you get when {says}" for says in known[:1]]
    if not known:
        lines += [s for s in (_zeros(got), _factor(got, want, axes)) if s]
        if len(lines) == 1:
            lines += [s for s in (_constant_along(got - want, axes), _confined(got - want, scale, axes, regions)) if s]
    index = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(got - want)), want.shape))
    lines.append((f"at {list(index)}: " if index else "") + f"yours {got[index]:.6g}, expected {want[index]:.6g}")
    return lines


def _equals(got, alternative) -> bool:
    try:
        alternative = np.asarray(alternative, np.float64)
    except (TypeError, ValueError):
        return False
    return alternative.shape == got.shape and np.isfinite(alternative).all() and \
        tensor_error(got, alternative)[1] <= MATCH


def _zeros(got) -> str:
    return "it is all zeros: nothing was accumulated into it" if not got.any() else ""


def _factor(got, want, axes) -> str:
    """A constant factor between got and want, and which size it is."""
    c = float(np.vdot(got, want) / np.vdot(want, want))
    if not np.allclose(got, c * want, rtol=1e-9, atol=1e-12 * np.max(np.abs(want))):
        return ""
    if abs(c + 1) < 1e-9:
        return "it is the right one with the sign flipped: minus where the derivative has plus?"
    sizes = _named_sizes(want.shape, axes)
    for k, name in sizes.items():
        if abs(c - k) < 1e-9 * k:
            return f"it is {k} times too large, {k} = {name}: a sum where a mean belongs (a missing 1/{name})?"
        if abs(c * k - 1) < 1e-9:
            return f"it is {k} times too small, {k} = {name}: divided by {name} once too often (a mean where a sum " \
                   "belongs)?"
    return f"it is the right tensor times {c:.6g}: a constant factor is off"


def _named_sizes(shape, axes) -> dict:
    """{size: its name} for each axis size and the product of the leading ones (B*T)."""
    names = list(axes) if len(axes) == len(shape) else [f"axis {i}" for i in range(len(shape))]
    sizes = {}
    for i in range(len(shape) - 1, -1, -1):
        sizes.setdefault(shape[i], names[i])
    if len(shape) >= 3:
        sizes.setdefault(math.prod(shape[:-1]), "*".join(names[:-1]))
    return {k: v for k, v in sizes.items() if k > 1}


def _constant_along(diff, axes) -> str:
    """An error the same at every index of one axis: a term shared along that axis is off."""
    for axis in range(diff.ndim - 1, -1, -1):
        if diff.shape[axis] > 1 and np.allclose(diff, diff.mean(axis=axis, keepdims=True),
                                                atol=1e-9 * np.max(np.abs(diff))):
            name = axes[axis] if len(axes) == diff.ndim else f"axis {axis}"
            return (f"the error is the same at every index of axis {axis} ({name}): a term shared by all "
                    f"{diff.shape[axis]} entries along {name} is wrong or missing, such as a mean or sum over {name}")
    return ""


def _confined(diff, scale, axes, regions) -> str:
    """An error only at some indices of an axis, named when they are one of the exercise's regions."""
    wrong_anywhere = np.abs(diff) > 1e-9 * scale
    for axis in range(diff.ndim):
        other = tuple(a for a in range(diff.ndim) if a != axis)
        rows = tuple(int(i) for i in np.flatnonzero(wrong_anywhere.any(axis=other)))
        if 0 < len(rows) < diff.shape[axis]:
            name = axes[axis] if len(axes) == diff.ndim else f"axis {axis}"
            meaning = next((r.means for r in regions if r.axis == axis and tuple(r.index) == rows), "")
            return f"only indices {list(rows)} of axis {axis} ({name}) are wrong" + (f": {meaning}" if meaning else "")
    return ""
