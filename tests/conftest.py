"""Hypothesis runs derandomized: the same examples on every run and every machine, so a CI run
is reproducible (same seed, same result). Explore new examples locally with
`pytest --hypothesis-profile=explore`."""
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("deterministic")
