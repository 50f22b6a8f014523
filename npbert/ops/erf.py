"""The error function for arrays.

NumPy has no erf. We vectorise the C library's erf (via Numba, already a dependency) so
GELU is exact to the last bit in float64, and the NumPy and Numba backends share it.
"""
import math

import numba


@numba.vectorize(["float32(float32)", "float64(float64)"], cache=True)
def erf(x):
    return math.erf(x)
