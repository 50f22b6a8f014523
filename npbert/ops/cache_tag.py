"""Which backend made a cache. The forward of a hot op tags its cache with the backend that made
it ("numpy" in npbert/ops, "numba" in npbert/kernels), and its backward refuses a cache of the
other backend: the two keep some fields in other layouts (a float64 (N,) rstd against a
(..., 1) one), so a mixed pair would give a wrong gradient or a Numba typing error deep inside
a kernel instead of this message."""
from npbert.errors import InputError

NUMPY = "numpy"


def check_tag(cache, backend: str, op: str) -> None:
    made_by = getattr(cache, "backend", None)
    if made_by != backend:
        raise InputError(f"{op} ({backend} backend) was handed a cache made by the {made_by} backend's forward; "
                         "run a forward and its backward on the same backend (npbert.backend.use_backend)")
