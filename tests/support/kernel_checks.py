"""What the kernel tests share: the tolerances, and the comparison of a kernel with the NumPy
reference (tests/kernels/test_each_kernel.py's docstring says why a float32 kernel is compared with the
reference run in float64 on the same inputs)."""
import numpy as np
from hypothesis import HealthCheck, settings

from npbert.gradcheck import scaled_error

TOL = {np.float64: 1e-12, np.float32: 1e-5}
DTYPES = [np.float64, np.float32]
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_close(got, want, dtype, what="", floor=0.0):
    """max |got - want| <= TOL * max(max |want|, floor): relative, or absolute below floor."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == dtype, (what, got.shape, want.shape, got.dtype, dtype)
    err = scaled_error(got, want, floor)
    assert err <= TOL[dtype], f"{what}: relative error {err:.3g} > {TOL[dtype]:g}"


def assert_all_close(got, want, dtype, what=""):
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if w is None:
            assert g is None
        else:
            assert_close(g, w, dtype, f"{what}[{i}]")


def exact(x):
    """float32 inputs -> float64 for the reference (see the module docstring)."""
    return x.astype(np.float64) if isinstance(x, np.ndarray) and x.dtype == np.float32 else x


def normal(seed, shape, dtype, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)
