"""Gradient checking: every hand-written backward against central finite differences in float64.

    checker.py   the checker: numerical_gradient, relative_error, check (one op -> a result row)
    cases.py     what it checks: every op, layer, head and whole model at small unequal sizes

`npbert gradcheck` prints one row per case; tests/model/test_gradcheck.py runs them all with
hypothesis-drawn sizes and masks (docs/gradcheck.md).
"""
from npbert.gradcheck.cases import Dims, head_cases, iter_gradchecks, op_cases, run_gradchecks, select_checks
from npbert.gradcheck.checker import (EPS, TOL, GradcheckResult, check, float32_errors, numerical_gradient,
                                     relative_error, scaled_error)

__all__ = ["EPS", "TOL", "Dims", "GradcheckResult", "check", "float32_errors", "head_cases", "iter_gradchecks",
           "numerical_gradient", "op_cases", "relative_error", "run_gradchecks", "scaled_error", "select_checks"]
