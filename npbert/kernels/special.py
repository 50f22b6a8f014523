"""erf and tanh for the GELU kernels, written so LLVM can vectorise the loops that call them.

math.erf / math.tanh in Numba are scalar library calls (~9 and ~20 ns an element here, 5-10x
NumPy's SIMD tanh), and a call inside a loop also keeps everything else in it scalar.
- fast_tanh: float64 keeps libm's tanh; float32 computes sign(a) (1 - e) / (1 + e) with
  e = exp(-2|a|) via fast_exp, in float32: absolute error ~1e-7, which is what GELU needs
  (it adds 1 to tanh and multiplies by x).
- fast_erf: float64 keeps libm's erf (the exact reference path); float32 uses the Chebyshev
  erfc fit of Numerical Recipes (fractional error < 1.2e-7 everywhere), evaluated in float32:
  erf(x) to a few 1e-7 absolute, a few float32 ulp of 1 (tests/kernels/test_each_kernel.py holds it).
"""
import math

import numpy as np
from numba import njit

from npbert.kernels.fastexp import by_width, fast_exp


F = np.float32
C = [F(c) for c in (1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
                    -1.13520398, 1.48851587, -0.82215223, 0.17087277)]
C0, C1, C2, C3, C4, C5, C6, C7, C8, C9 = C


@njit(cache=True, inline="always")
def _erf_cheb(x):
    # x: float32, computed in float32 (16 lanes a vector instead of 8)
    z = abs(x)
    t = F(1.0) / (F(1.0) + F(0.5) * z)
    poly = -z * z - C0 + t * (C1 + t * (C2 + t * (C3 + t * (C4 + t * (C5 + t * (C6 + t * (C7 + t * (
        C8 + t * C9))))))))
    erfc = t * fast_exp(min(poly, F(0.0)))             # poly <= 0 for z >= 0; min guards rounding
    return F(1.0) - erfc if x >= F(0.0) else erfc - F(1.0)


def fast_erf(x):
    return math.erf(x)


by_width(fast_erf, _erf_cheb, math.erf)


@njit(cache=True, inline="always")
def _tanh_exp(a):
    # a: float32, computed in float32
    e = fast_exp(F(-2.0) * abs(a))
    t = (F(1.0) - e) / (F(1.0) + e)
    return t if a >= F(0.0) else -t


def fast_tanh(x):
    return math.tanh(x)


by_width(fast_tanh, _tanh_exp, math.tanh)
