"""erf and tanh for the GELU kernels, written so LLVM can vectorise the loops that call them.

math.erf / math.tanh in Numba are scalar library calls (~9 and ~20 ns an element here, 5-10x
NumPy's SIMD tanh), and a call inside a loop also keeps everything else in it scalar.
- fast_tanh: float64 keeps libm's tanh; float32 computes sign(a) (1 - e) / (1 + e) with
  e = exp(-2|a|) via fast_exp, in float64: absolute error ~1e-16, which is what GELU needs
  (it adds 1 to tanh and multiplies by x).
- fast_erf: float64 keeps libm's erf (the exact reference path); float32 uses the Chebyshev
  erfc fit of Numerical Recipes (fractional error < 1.2e-7 everywhere), evaluated in float64:
  erf(x) to ~1.2e-7 absolute, about one float32 ulp of 1 (tests/test_kernels.py holds it).
"""
import math

from numba import njit
from numba.core import types
from numba.extending import overload

from npbert.kernels.fastexp import fast_exp


@njit(cache=True, inline="always")
def _erf_cheb(x):
    z = abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = (-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277)))))))))
    erfc = t * fast_exp(min(poly, 0.0))                # poly <= 0 for z >= 0; min guards rounding
    return 1.0 - erfc if x >= 0 else erfc - 1.0


def fast_erf(x):
    return math.erf(x)


@overload(fast_erf, inline="always")
def _fast_erf_overload(x):
    if isinstance(x, types.Float):
        if x.bitwidth == 32:
            return lambda x: _erf_cheb(float(x))
        return lambda x: math.erf(x)


@njit(cache=True, inline="always")
def _tanh_exp(a):
    e = fast_exp(-2.0 * abs(a))
    t = (1.0 - e) / (1.0 + e)
    return t if a >= 0 else -t


def fast_tanh(x):
    return math.tanh(x)


@overload(fast_tanh, inline="always")
def _fast_tanh_overload(x):
    if isinstance(x, types.Float):
        if x.bitwidth == 32:
            return lambda x: _tanh_exp(float(x))
        return lambda x: math.tanh(x)
