"""Grading a learner's forward and backward: the golden vectors first (the forward's output, then each
gradient, in the order the backward returns them), then central finite differences of their own
forward (npbert.gradcheck), the exercise's probes (inputs where a classic slip shows: huge scores, a
constant row), and float32 in, float32 out. The first thing wrong is reported, in words, with its
likely cause (diagnose.py); a pass says what was checked.
"""
from __future__ import annotations

import os
import textwrap
import traceback
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np

import npbert
from npbert.exercises.diagnose import Finding, compare
from npbert.golden.cases import golden_cases
from npbert.golden.schema import TOLERANCE
from npbert.gradcheck.checker import TOL, check


WIDTH = 100                          # a report's lines are wrapped to this


class Exercise(NamedTuple):
    name: str                        # what check() is given: "layernorm"
    page: str                        # the derivation: "docs/layers/layernorm.md"
    golden: str                      # the golden case: "layernorm"
    functions: tuple                 # the learner's function names, in check()'s order
    solution: tuple                  # the project's functions with the same signatures
    run: Callable                    # (functions, tensors, constants) -> (out, cache): the forward, as called here
    backward: Callable               # (functions, dout, cache) -> {name: gradient}: the backward, as called here
    grads: tuple                     # the gradients compared, in the order the backward returns them
    axes: dict = {}                  # tensor name -> its axes' names, ("B", "T", "H")
    mistakes: tuple = ()             # diagnose.Mistake: classic slips, recognised by the tensor they produce
    probes: tuple = ()               # (functions) -> a Finding or None: an input where a slip shows
    regions: Callable = None         # tensors -> {tensor name: [diagnose.Region]}
    gradcheck: Callable = None       # (functions, tensors, constants) -> (inputs, run, backward): another check
    nonfinite: str = ""              # the likely cause of NaN or inf in the output


@dataclass
class Report:
    name: str
    passed: bool
    lines: list = field(default_factory=list)

    def __str__(self):
        return "\n".join(textwrap.fill(line, WIDTH, subsequent_indent="    " if line.startswith("  - ") else "  ")
                         for line in self.lines)


def golden(name: str, dtype: str):
    """The golden case `name` in dtype -> (tensors by name, constants, floors: for a gradient that is 0 in
    exact arithmetic, the scale its error is measured against)."""
    case = golden_cases(dtypes=(dtype,), names=[name])[0]
    return {k: v for k, (role, v) in case.tensors.items()}, case.constants, case.floors


def grade(exercise: Exercise, functions) -> Report:
    """The first thing wrong with the learner's functions, or what they passed. NumPy's warnings
    (overflow, invalid value) are not printed: the report says what they mean."""
    with np.errstate(all="ignore"):
        return _grade(exercise, functions)


def _grade(exercise: Exercise, functions) -> Report:
    tensors, constants, floors = golden(exercise.golden, "float64")
    given = {k: v.copy() for k, v in tensors.items() if isinstance(v, np.ndarray)}
    first, last = exercise.functions[0], exercise.functions[-1]
    out, cache, finding = attempt(lambda: exercise.run(functions, tensors, constants), first)
    finding = finding or changed_in_place(tensors, given, "forward")
    finding = finding or compare("out", out, tensors["out"], TOLERANCE["float64"], exercise.axes.get("out", ()),
                                 _mistakes(exercise, "out"), tensors, _regions(exercise, tensors, "out"),
                                 nonfinite=exercise.nonfinite)
    finding = finding or next(filter(None, (probe(functions) for probe in exercise.probes)), None)
    if finding:
        return failed(exercise, first, finding)
    grads, _, finding = attempt(lambda: (exercise.backward(functions, tensors["grad/out"], cache), None), last)
    finding = finding or changed_in_place(tensors, given, "backward")
    for name in () if finding else exercise.grads:
        finding = compare(name, grads.get(name), tensors["grad/" + name], TOLERANCE["float64"],
                          exercise.axes.get(name, ()), _mistakes(exercise, name), tensors,
                          _regions(exercise, tensors, name), floors.get("grad/" + name, 0.0))
        if finding:
            same_shape = shape_of(grads.get(name)) == np.shape(tensors["grad/" + name])
            return failed(exercise, last, finding, finite_differences(exercise, functions, name) if same_shape else None)
    if finding:
        return failed(exercise, last, finding)
    return after_the_goldens(exercise, functions, out, grads, tensors)


def changed_in_place(tensors, given, function: str) -> Finding | None:
    """An array the learner's forward or backward was given and wrote into (x -= mean, dy *= gamma):
    the result may be right once, while the caller's array (a layer's input, the gradient the layer
    before still needs) is not what it was; every later call sees another one."""
    name = next((k for k, v in given.items() if not np.array_equal(tensors[k], v)), None)
    if name is None:
        return None
    what = "dout, the gradient it was given," if name == "grad/out" else f"its input {name}"
    example = "dy *= gamma, dy[...] = 0" if function == "backward" else "x -= mean, x *= gamma, x[...] = ..."
    return Finding(f"it changes {what} in place", (
        f"{'dout' if name == 'grad/out' else name} after the call is not what the caller passed: an in-place operation "
        f"({example}) writes into the caller's array, so the result may be right while everything that reads that "
        f"array afterwards sees another one; make a new array instead (xc = x - mean, dxhat = dy * gamma)",))


def gradients(names, returned) -> dict:
    """A backward's return value by the gradients' names, one per input (zip would drop an extra value
    silently, and leave a missing one None); WrongCount otherwise."""
    if not isinstance(returned, (tuple, list)) or len(returned) != len(names):
        raise WrongCount(names, returned)
    return dict(zip(names, returned))


class WrongCount(Exception):
    """A backward returned another number of values than its inputs have gradients."""

    def finding(self) -> Finding:
        names, returned = self.args
        count = len(returned) if isinstance(returned, (tuple, list)) else 1
        wanted = ", ".join("d" + n for n in names)
        return Finding(f"it returns {count} value{'s' * (count != 1)}, not {len(names)}", (
            f"a backward returns one gradient per input, {wanted}, in that order; "
            + ("is there an extra value in the return?" if count > len(names) else "is one of them missing?"),))


def shape_of(value):
    """np.shape of what the learner returned, or None for what has none (a ragged (dx, None))."""
    try:
        return np.shape(value)
    except ValueError:
        return None


def after_the_goldens(exercise, functions, out, grads, tensors) -> Report:
    """Finite differences and float32, once the golden vectors pass; a Report either way."""
    errors = finite_differences(exercise, functions)
    if isinstance(errors, Finding):
        return failed(exercise, exercise.functions[-1], errors)
    if max(errors.values()) >= TOL:
        name = max(errors, key=errors.get)
        return failed(exercise, exercise.functions[-1], disagreement(exercise, name, errors[name]))
    function, finding = float32_finding(exercise, functions)
    if finding:
        return failed(exercise, function, finding)
    forward = float(np.max(np.abs(np.asarray(out, np.float64) - tensors["out"]), initial=0.0))
    backward = max(float(np.max(np.abs(np.asarray(grads[n], np.float64) - tensors["grad/" + n]), initial=0.0))
                   for n in exercise.grads)
    grads = ", ".join("d" + n for n in exercise.grads) if len(exercise.grads) <= 4 else \
        f"all {len(exercise.grads)} gradients"
    lines = [f"{exercise.name}: all checks passed."]
    lines += [f"  - forward: the golden output to {forward:.2g} (largest difference)"] if len(exercise.functions) > 1 else []
    lines += [f"  - backward: {grads}: the golden ones to {backward:.2g}",
             f"  - central finite differences of your forward agree with your backward (largest relative error "
             f"{max(errors.values()):.2g}, tolerance {TOL:g})"]
    lines += [f"  - {probe.__doc__.strip()[0].lower()}{probe.__doc__.strip()[1:]}: right" for probe in exercise.probes]
    return Report(exercise.name, True, lines + ["  - float32 in, float32 out, within the golden float32 tolerance"])


def disagreement(exercise: Exercise, name: str, error: float) -> Finding:
    """Finite differences disagree with a backward that matched the golden vectors: with dropout on
    (an exercise's own gradcheck), a missing mask; else (the golden inputs again) state kept between calls."""
    measured = f"central finite differences of your forward disagree with it (relative error {error:.2g}, " \
               f"tolerance {TOL:g}), though it matches the golden vectors"
    if exercise.gradcheck is not None:
        return Finding(f"d{name} is wrong with dropout on", (
            f"{measured} (where dropout is off): with dropout on, is the gradient multiplied by the same mask?",))
    return Finding(f"d{name} is wrong when your functions are called again", (
        f"{measured} on the same inputs, called once: does your code keep something from one call to the next "
        "(a global, a cached result)?",))


def failed(exercise: Exercise, function: str, finding: Finding, extra=None) -> Report:
    lines = [f"{exercise.name}: not yet. In your {function}: {finding.what}."]
    lines += [f"  - {line}" for line in finding.lines]
    if isinstance(extra, dict) and extra:
        (name, error), = extra.items()
        lines.append(f"  - finite differences of your own forward agree it is wrong: relative error {error:.2g} in "
                     f"d{name} (tolerance {TOL:g})" if error >= TOL else
                     f"  - (finite differences of your forward give d{name} within {error:.2g}: your forward and "
                     "this gradient disagree only here)")
    part = next((f', "{part}"' for part in ("Forward", "Backward") if function.endswith("_" + part.lower())), "")
    lines.append(f"  Read {exercise.page}{part}; stuck? show_solution({exercise.name!r}) prints npbert's own.")
    return Report(exercise.name, False, lines)


def finite_differences(exercise: Exercise, functions, only=None):
    """{input name: relative error} of the learner's backward against central differences of their
    forward, on the golden float64 inputs (or the exercise's own gradcheck problem); a Finding if it
    cannot be run."""
    tensors, constants, _ = golden(exercise.golden, "float64")
    if exercise.gradcheck is not None:
        inputs, run, backward = exercise.gradcheck(functions, tensors, constants)
    else:
        inputs = {n: tensors[n].copy() for n in exercise.grads}
        run = lambda p: exercise.run(functions, {**tensors, **p}, constants)          # noqa: E731
        backward = lambda d, c: exercise.backward(functions, d, c)                    # noqa: E731
    if only is not None:
        inputs = {only: inputs[only]}
    try:
        return check(exercise.name, inputs, run, backward).errors
    except Exception as error:                          # the learner's code: anything may go wrong
        return Finding("the finite-difference check did not run", (f"{type(error).__name__}: {error}",))


def float32_finding(exercise: Exercise, functions) -> tuple:
    """float32 in must give float32 out (and float32 gradients), within the golden float32 tolerance:
    (the function at fault, a Finding), or (None, None)."""
    tensors, constants, floors = golden(exercise.golden, "float32")
    first, last = exercise.functions[0], exercise.functions[-1]
    out, cache, finding = attempt(lambda: exercise.run(functions, tensors, constants), first)
    if finding:
        return first, finding._replace(what=finding.what + " (given float32 inputs)")
    grads, _, finding = attempt(lambda: (exercise.backward(functions, tensors["grad/out"], cache), None), last)
    if finding:
        return last, finding._replace(what=finding.what + " (given float32 inputs)")
    for name, got in {"out": out, **grads}.items():
        want = tensors["out" if name == "out" else "grad/" + name]
        finding = not_float32(name, got)
        if not finding:
            finding = compare(name, got, want, TOLERANCE["float32"], exercise.axes.get(name, ()),
                              floor=floors.get("grad/" + name, 0.0))
            finding = finding and finding._replace(what=finding.what + " in float32")
        if finding:
            return (first if name == "out" else last), finding
    return None, None


def not_float32(name: str, got) -> Finding | None:
    """What the learner returned for float32 inputs, when it is not a float32 NumPy array (or scalar)."""
    what = "the output" if name == "out" else f"the gradient d{name}"
    if not isinstance(got, (np.ndarray, np.generic)):
        return Finding(f"{what} for float32 inputs is a {type(got).__name__}, not a NumPy array", (
            "return an array of the input's dtype (np.array of a list is float64; build it with NumPy operations "
            "on the inputs, or convert with .astype(x.dtype))",))
    if got.dtype != np.float32:
        return Finding(f"{what} for float32 inputs is not float32", (
            f"it is {got.dtype}, not float32: a float64 constant (np.ones(H), np.array(1.0), np.float64(...)) upcast "
            "it; keep the input's dtype (x.dtype), as BERT trains in float32",))
    return None


def attempt(call, function: str):
    """call() -> (first, second, None), or (None, None, a Finding) when the learner's code raised."""
    try:
        first, second = call()
        return first, second, None
    except Exception as error:                          # the learner's code: anything may go wrong
        return None, None, raised(function, error)


def raised(function: str, error: Exception) -> Finding:
    """An exception from the learner's code, the line it came from, and what such an error usually means."""
    if isinstance(error, NotImplementedError):
        return Finding("it is not written yet", ("replace its `raise NotImplementedError` with your code",))
    if isinstance(error, WrongCount):
        return error.finding()
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not _ours(f.filename)]
    where = f", at line {frames[-1].lineno}: `{frames[-1].line}`" if frames and frames[-1].line else ""
    lines = [f"it raised {type(error).__name__}: {error}{where}"]
    hint = exception_hint(error)
    return Finding("it did not run", tuple(lines + ([hint] if hint else [])))


def exception_hint(error: Exception) -> str:
    text = str(error)
    if "could not be broadcast" in text:
        return ("two arrays' shapes do not line up: a mean or sum over an axis keeps a size-1 axis with "
                "keepdims=True, so it broadcasts back against the array it came from")
    if "matmul" in text or "shapes" in text and "not aligned" in text:
        return ("the inner sizes of a matrix product do not match: check which operand needs a transpose (a linear "
                "weight is stored (out, in): y = x @ w.T)")
    if isinstance(error, IndexError) and "-100" in text:
        return "a label of -100 marks a row to ignore (ignore_index): leave such rows out, do not index with -100"
    if isinstance(error, (TypeError, ValueError)) and ("unpack" in text or "iterable" in text):
        return "check what it returns: a forward returns (output, cache), a backward one gradient per input"
    return ""


def _ours(filename: str) -> bool:
    """A frame of npbert's or NumPy's code, not the learner's."""
    roots = (os.path.dirname(npbert.__file__), os.path.dirname(np.__file__))
    return os.path.abspath(filename).startswith(roots)


def _mistakes(exercise, name) -> tuple:
    return tuple(m for m in exercise.mistakes if m.tensor == name)


def _regions(exercise, tensors, name) -> tuple:
    return tuple((exercise.regions(tensors) if exercise.regions else {}).get(name, ()))
