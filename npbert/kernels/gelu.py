"""GELU forward/backward as one elementwise pass each (split over threads), both forms of npbert.ops.gelu.

The formulas are the reference's, term for term, with the vectorisable erf/tanh/exp of
special.py and fastexp.py (float64 keeps libm's erf). Constants are handed in as scalars of
the input's dtype so a float32 run computes in float32 where the reference does. The two
passes are compiled with fastexp.FMA (multiply-adds fused, nothing else), which
tests/kernels/test_each_kernel.py shows safe over every kind of input, infinities and NaN included.
"""
import numpy as np
from numba import njit

from npbert.kernels.fastexp import FMA, fast_exp
from npbert.kernels.memory import empty_apart
from npbert.kernels.special import fast_erf, fast_tanh
from npbert.kernels.threads import parallel_for
from npbert.ops.gelu import GELU_TANH_C, INV_SQRT_2PI, SQRT_2_OVER_PI, SQRT_HALF, GeluCache, check_hidden_act

FORMS = {"gelu": 0, "gelu_new": 1}
GRAIN = 16384                                          # elements: below this one thread is faster


# The formulas, one inline function per form and direction. One per form, not one with a
# `form` argument: the caller's branch on the form must stay outside its loop for the loop to
# vectorise. The two passes below are also linear_gelu.py's, called per row.

@njit(cache=True, inline="always")
def gelu_erf(v, sqrt_half, half, one):
    return half * v * (one + fast_erf(v * sqrt_half))


@njit(cache=True, inline="always")
def gelu_tanh(v, sqrt_2_pi, k, half, one):
    return half * v * (one + fast_tanh(sqrt_2_pi * (v + k * v * v * v)))


@njit(cache=True, inline="always")
def dgelu_erf(v, sqrt_half, inv_sqrt_2pi, half, one):
    cdf = half * (one + fast_erf(v * sqrt_half))       # Phi(x)
    pdf = inv_sqrt_2pi * fast_exp(-half * v * v)       # phi(x)
    return cdf + v * pdf


@njit(cache=True, inline="always")
def dgelu_tanh(v, sqrt_2_pi, k, half, one, three):
    v2 = v * v
    t = fast_tanh(sqrt_2_pi * (v + k * v2 * v))
    dinner = sqrt_2_pi * (one + three * k * v2)
    s = one - t * t                                    # 0 once tanh saturates (|v| > ~10), where v * v
    curve = half * v * s * dinner if s != 0 else s * v  # may be inf in float32: 0 * inf would be NaN
    return half * (one + t) + curve


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FMA)
def forward_pass(lo, hi, x, y, form, sqrt_half, inv_sqrt_2pi, sqrt_2_pi, k, half, one, three):
    # x, y: (N,) flat
    x, y = x[lo:hi], y[lo:hi]                          # index from 0: see threads.py
    if form == 0:                                      # the branch outside the loop: it vectorises
        for i in range(x.size):
            y[i] = gelu_erf(x[i], sqrt_half, half, one)
    else:
        for i in range(x.size):
            y[i] = gelu_tanh(x[i], sqrt_2_pi, k, half, one)


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FMA)
def backward_pass(lo, hi, dy, x, dx, form, sqrt_half, inv_sqrt_2pi, sqrt_2_pi, k, half, one, three):
    # dy, x, dx: (N,) flat
    dy, x, dx = dy[lo:hi], x[lo:hi], dx[lo:hi]
    if form == 0:
        for i in range(x.size):
            dx[i] = dy[i] * dgelu_erf(x[i], sqrt_half, inv_sqrt_2pi, half, one)
    else:
        for i in range(x.size):
            dx[i] = dy[i] * dgelu_tanh(x[i], sqrt_2_pi, k, half, one, three)


def pass_args(hidden_act, dtype):
    """(form, constants...): the passes' arguments after the arrays. The constants are scalars
    of the input's dtype (not an array: loads from an array the output might alias kept the
    loop from vectorising, 4x slower). linear_gelu.py calls the passes with them too."""
    check_hidden_act(hidden_act)
    consts = (SQRT_HALF, INV_SQRT_2PI, SQRT_2_OVER_PI, GELU_TANH_C, 0.5, 1.0, 3.0)
    return (FORMS[hidden_act], *(dtype.type(c) for c in consts))


def gelu_forward(x, hidden_act="gelu"):
    # x: (...) -> y: (...)
    x = np.ascontiguousarray(x)
    y = empty_apart(x.shape, x.dtype, x)
    parallel_for(forward_pass, x.size, x.reshape(-1), y.reshape(-1), *pass_args(hidden_act, x.dtype),
                 grain=GRAIN)
    return y, GeluCache(x, hidden_act)


def gelu_backward(dy, cache: GeluCache):
    x, hidden_act = cache.x, cache.hidden_act
    dx = empty_apart(x.shape, x.dtype, x, dy)
    parallel_for(backward_pass, x.size, np.ascontiguousarray(dy).reshape(-1), x.reshape(-1), dx.reshape(-1),
                 *pass_args(hidden_act, x.dtype), grain=GRAIN)
    return dx
