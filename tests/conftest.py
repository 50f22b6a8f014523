"""Hypothesis runs derandomized: the same examples on every run and every machine, so a CI run
is reproducible (same seed, same result). Explore new examples locally with
`pytest --hypothesis-profile=explore`."""
import pytest
from hypothesis import settings

from npbert import backend

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("deterministic")


@pytest.fixture(autouse=True)
def _restore_backend():
    """A test that runs a training command switches the process to that command's backend
    (numba by default); put back the one in force before, so the next test runs on the
    backend it expects."""
    previous = backend.get_backend()
    yield
    backend.set_backend(previous)
