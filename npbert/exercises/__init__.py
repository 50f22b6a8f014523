"""Exercises graded by npbert's own checks: write a layer's forward and backward (or AdamW's update)
yourself, then `check("layernorm", layernorm_forward, layernorm_backward)` runs them through the
golden vectors and central finite differences and says what is wrong first, in words: which tensor,
along which axis, and the likely cause. The solutions are npbert's own functions
(`show_solution("layernorm")` prints them). The exercises themselves: demos/exercises/.
"""
from __future__ import annotations

import difflib
import inspect

from npbert.exercises.adamw import ADAMW, grade_adamw
from npbert.exercises.attention import ATTENTION
from npbert.exercises.encoder_layer import ENCODER_LAYER
from npbert.exercises.gelu import GELU
from npbert.exercises.grade import Exercise, Report, grade
from npbert.exercises.layernorm import LAYERNORM
from npbert.exercises.linear import LINEAR
from npbert.exercises.softmax import CROSS_ENTROPY, SOFTMAX

EXERCISES = {e.name: e for e in (LINEAR, LAYERNORM, GELU, SOFTMAX, CROSS_ENTROPY, ATTENTION, ENCODER_LAYER, ADAMW)}


def report(name: str, *functions) -> Report:
    """The learner's functions (in the order the exercise names them) graded -> a Report; a call
    that names no exercise, or gives it the wrong number of functions, is a Report saying so."""
    misuse = unknown(name) or wrong_count(name, functions)
    if misuse:
        return Report(str(name), False, [misuse])
    e = EXERCISES[name]
    return grade_adamw(functions) if e is ADAMW else grade(e, functions)


def check(name: str, *functions) -> None:
    """Grade your functions for exercise `name` and print what is wrong first, or what they passed:
    check("layernorm", layernorm_forward, layernorm_backward). Your functions run as they are: if
    one never returns (a loop that does not end), Ctrl-C (in Jupyter: Kernel > Interrupt) stops it."""
    print(report(name, *functions))


def show_solution(name: str) -> None:
    """Print npbert's own functions for exercise `name`: the solution, and where it lives."""
    if unknown(name):
        print(unknown(name))
        return
    for function in EXERCISES[name].solution:
        print(f"# {inspect.getsourcefile(function)}\n{inspect.getsource(function)}")


def unknown(name) -> str:
    """What to say when `name` is no exercise, in a student's words, or ""."""
    if isinstance(name, str) and name in EXERCISES:
        return ""
    close = difflib.get_close_matches(str(name), list(EXERCISES), n=1)
    return (f"check({name!r}, ...): no exercise named {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
            + f"; the exercises are {', '.join(EXERCISES)}")


def wrong_count(name: str, functions) -> str:
    """What to say when check() is given another number of functions than the exercise has, or ""."""
    wanted = EXERCISES[name].functions
    if len(functions) == len(wanted):
        return ""
    return (f"check({name!r}, ...) takes {len(wanted)} function{'s' if len(wanted) > 1 else ''}, {', '.join(wanted)}, "
            f"in that order; it was given {len(functions)}")


__all__ = ["EXERCISES", "check", "report", "show_solution"]
