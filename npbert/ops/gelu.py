"""GELU, selected by the config's hidden_act:

  "gelu"      exact:  y = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
  "gelu_new"  tanh:   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))

Backward differentiates the same formula as forward (docs/layers/gelu.md).
"""
import math
from typing import NamedTuple

import numpy as np

from npbert.ops.erf import erf

SQRT_HALF = math.sqrt(0.5)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_TANH_C = 0.044715
HIDDEN_ACTS = ("gelu", "gelu_new")


class GeluCache(NamedTuple):
    x: np.ndarray            # (...) the input (kept, not copied: do not modify it before backward)
    hidden_act: str          # "gelu" or "gelu_new": backward differentiates the same form


def check_hidden_act(hidden_act):
    if hidden_act not in HIDDEN_ACTS:
        raise ValueError(f"unknown hidden_act {hidden_act!r}; npbert has 'gelu' and 'gelu_new'")


def gelu_forward(x, hidden_act="gelu"):
    # x: (...) -> y: (...)
    check_hidden_act(hidden_act)
    if hidden_act == "gelu":
        y = 0.5 * x * (1.0 + erf(x * SQRT_HALF))
    else:
        y = 0.5 * x * (1.0 + np.tanh(SQRT_2_OVER_PI * (x + GELU_TANH_C * x * x * x)))
    return y, GeluCache(x, hidden_act)


def gelu_backward(dy, cache: GeluCache):
    x = cache.x
    if cache.hidden_act == "gelu":
        cdf = 0.5 * (1.0 + erf(x * SQRT_HALF))                 # Phi(x)
        pdf = INV_SQRT_2PI * np.exp(-0.5 * x * x)              # phi(x)
        return dy * (cdf + x * pdf)
    x2 = x * x
    t = np.tanh(SQRT_2_OVER_PI * (x + GELU_TANH_C * x2 * x))
    dinner = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_TANH_C * x2)
    s = 1.0 - t * t                                            # sech^2: exactly 0 once tanh saturates (|x| > ~10)
    # Saturated, the curve term x s dinner / 2 is 0, but x * x may have overflowed (float32 at
    # |x| >= 1.8e19; float64 beyond 1e154) and 0 * inf is NaN: take it as s * x there (0, and NaN
    # only at x = +-inf, as the forward). The kernel (npbert/kernels/gelu.py) guards the same way.
    with np.errstate(invalid="ignore"):                       # the discarded 0 * inf of np.where's other branch
        curve = np.where(s != 0, 0.5 * x * s * dinner, s * x)
    return dy * (0.5 * (1.0 + t) + curve)
