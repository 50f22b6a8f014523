"""Gradient checking: every hand-written backward against central finite differences, in float64.

For an op y, cache = op_forward(inputs) we check the scalar f = sum(y * R) with a fixed random R,
so the analytic gradient is op_backward(R, cache); the numerical one perturbs each input
element by +-eps and takes (f(x+eps) - f(x-eps)) / 2 eps. Dropout draws from a Generator made
afresh from the same seed on every call, so every evaluation drops the same elements.

The error of one tensor is ||analytic - numerical|| / max(||analytic||, ||numerical||, 1): relative
for gradients of norm above 1, absolute below, because some gradients are exactly zero in
exact arithmetic (the key bias: softmax ignores a constant added to a row of scores) and
their finite differences are pure rounding noise (~1e-10). An op passes when the largest
error over its inputs is below `tol` (1e-6). Finite differences are only
trustworthy in float64: float32 paths are compared against float64 instead (tests/).

The cases checked (every op, layer, head and whole model) are in cases.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

EPS = 1e-6
TOL = 1e-6


def numerical_gradient(f, x, eps=EPS):
    """Central differences of the scalar f() with respect to every element of x (perturbed in place)."""
    grad = np.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)      # views: x must be contiguous
    assert np.shares_memory(flat, x), "numerical_gradient needs a contiguous array"
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        f_plus = f()
        flat[i] = old - eps
        f_minus = f()
        flat[i] = old
        gflat[i] = (f_plus - f_minus) / (2.0 * eps)
    return grad


def relative_error(a, b) -> float:
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), 1.0))


def scaled_error(got, exact, floor=0.0) -> float:
    """max |got - exact| / max(max |exact|, floor): a float32 result against the float64 answer,
    relative to the tensor's own scale, so an all-zero or mis-scaled tensor fails however small
    its entries (an elementwise relative error means nothing where entries cancel to ~0). floor:
    for a result that is 0 in exact arithmetic, both sides are rounding noise, measured against
    the size of the terms summed instead. 0 when both are exactly zero."""
    exact = np.asarray(exact, dtype=np.float64)
    scale = max(float(np.max(np.abs(exact), initial=0.0)), floor, np.finfo(np.float64).tiny)
    return float(np.max(np.abs(np.asarray(got, dtype=np.float64) - exact), initial=0.0)) / scale


def float32_errors(grads32: dict, grads64: dict) -> dict:
    """name -> scaled_error of each float32 gradient against the float64 one of the same model.
    A tensor whose float64 gradient is below 1e-10 of the model's largest is 0 in exact
    arithmetic (the key biases: softmax ignores a constant added to a row of scores; a bias
    under a softmax over positions or choices): its entries on both sides are rounding noise
    of sums of gradient-sized terms, so it is measured against the model's largest gradient."""
    floors = zero_gradient_floors(grads64)
    return {name: scaled_error(grads32[name], g64, floor=floors[name]) for name, g64 in grads64.items()}


def zero_gradient_floors(grads64: dict) -> dict:
    """name -> the floor scaled_error needs: the largest gradient of them all for a gradient that is
    0 in exact arithmetic (its float64 entries below 1e-10 of that largest), 0 for the others."""
    largest = max((float(np.max(np.abs(g), initial=0.0)) for g in grads64.values()), default=0.0)
    return {name: largest if np.max(np.abs(g), initial=0.0) <= 1e-10 * largest else 0.0
            for name, g in grads64.items()}


@dataclass
class GradcheckResult:
    name: str
    shapes: str
    errors: dict = field(default_factory=dict)         # input name -> relative error
    tol: float = TOL

    @property
    def max_error(self) -> float:
        return max(self.errors.values(), default=0.0)

    @property
    def passed(self) -> bool:
        return all(math.isfinite(e) for e in self.errors.values()) and self.max_error < self.tol


def check(name, inputs, run, backward, shapes="", eps=EPS, tol=TOL, seed=0) -> GradcheckResult:
    """inputs: name -> float64 array to differentiate; run(inputs) -> (out, cache);
    backward(dout, cache) -> {name: gradient} for (at least) every key of inputs.
    A scalar output (a loss) is checked as it is; an array output through sum(out * R)."""
    out, cache = run(inputs)
    R = None if np.ndim(out) == 0 else np.random.default_rng(seed).standard_normal(np.shape(out))
    analytic = backward(1.0 if R is None else R, cache)

    def f():
        y, _ = run(inputs)
        return float(y) if R is None else float(np.sum(y * R))

    result = GradcheckResult(name, shapes, tol=tol)
    for key, x in inputs.items():
        result.errors[key] = relative_error(analytic[key], numerical_gradient(f, x, eps))
    return result


