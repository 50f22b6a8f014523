"""The thread count of the OpenBLAS under NumPy, read and set at run time.

npbert's numba backend runs its matmuls on its own threads (kernels/matmul.py), each calling
BLAS on a part of the rows, so BLAS itself must run one thread meanwhile: OpenBLAS's own
workers would otherwise compete with npbert's for the same cores, and after each call they
spin waiting for the next (docs/performance.md, "Two threads"). There is no NumPy API for
this, so the library NumPy loaded is found in /proc/self/maps and its
openblas_set_num_threads is called through ctypes (0.5 us a call, measured). With another
BLAS (MKL, Accelerate) or no /proc, `available()` is False and npbert leaves BLAS alone.
"""
from __future__ import annotations

import contextlib
import ctypes
import re

import numpy as np  # noqa: F401  (loads the BLAS before /proc/self/maps is read)

# (prefix, suffix) of the symbol names: NumPy's wheels bundle scipy-openblas (64-bit ints)
_NAMINGS = (("scipy_", "64_"), ("", "64_"), ("", ""))
_library = None          # (ctypes.CDLL, naming) once looked up; False when there is none


def openblas_library():
    """(CDLL of the OpenBLAS NumPy loaded, (prefix, suffix) of its symbols), or None."""
    global _library
    if _library is None:
        _library = False
        try:
            with open("/proc/self/maps") as f:
                paths = sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", f.read())))
        except OSError:
            paths = []
        for path in paths:
            library = ctypes.CDLL(path)
            naming = next((n for n in _NAMINGS if hasattr(library, f"{n[0]}openblas_set_num_threads{n[1]}")), None)
            if naming is not None:
                _library = (library, naming)
                break
    return _library or None


def function(name):
    """The ctypes function `name` (e.g. "cblas_sgemm") under this build's symbol naming."""
    library, (prefix, suffix) = openblas_library()
    return getattr(library, f"{prefix}{name}{suffix}")


def available() -> bool:
    return openblas_library() is not None


def get_num_threads() -> int:
    return int(function("openblas_get_num_threads")())


def set_num_threads(n: int) -> None:
    function("openblas_set_num_threads")(int(n))


@contextlib.contextmanager
def single_threaded():
    """BLAS on one thread (the calling thread) inside the block, as before after it."""
    if not available():
        yield
        return
    before = get_num_threads()
    if before != 1:
        set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            set_num_threads(before)
