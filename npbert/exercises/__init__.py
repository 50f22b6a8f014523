"""Exercises graded by npbert's own checks: write a layer's forward and backward (or AdamW's update)
yourself, then `check("layernorm", layernorm_forward, layernorm_backward)` runs them through the
golden vectors and central finite differences and says what is wrong first, in words: which tensor,
along which axis, and the likely cause. The solutions are npbert's own functions
(`show_solution("layernorm")` prints them). The exercises themselves: demos/exercises/.
"""
from __future__ import annotations

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


def exercise(name: str) -> Exercise:
    if name not in EXERCISES:
        raise KeyError(f"no exercise named {name!r}; they are {', '.join(EXERCISES)}")
    return EXERCISES[name]


def report(name: str, *functions) -> Report:
    """The learner's functions (in the order the exercise names them) graded -> a Report."""
    e = exercise(name)
    if len(functions) != len(e.functions):
        raise TypeError(f"check({name!r}, ...) takes {len(e.functions)} function(s): {', '.join(e.functions)}")
    return grade_adamw(functions) if e is ADAMW else grade(e, functions)


def check(name: str, *functions) -> None:
    """Grade your functions for exercise `name` and print what is wrong first, or what they passed:
    check("layernorm", layernorm_forward, layernorm_backward)."""
    print(report(name, *functions))


def show_solution(name: str) -> None:
    """Print npbert's own functions for exercise `name`: the solution, and where it lives."""
    for function in exercise(name).solution:
        print(f"# {inspect.getsourcefile(function)}\n{inspect.getsource(function)}")


__all__ = ["EXERCISES", "check", "report", "show_solution"]
