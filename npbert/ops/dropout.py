"""Inverted dropout: keep each element with probability 1-p and scale it by 1/(1-p).

Randomness comes only from the numpy.random.Generator passed in; rng=None (or p=0) means
evaluation mode, where dropout is the identity. The uniforms are always drawn in float32,
so a float32 and a float64 run with the same seed drop the same elements.
"""
from typing import NamedTuple

import numpy as np

from npbert.ops.cache_tag import NUMPY, check_tag


class DropoutCache(NamedTuple):
    keep: np.ndarray | None  # (...) bool, the elements kept; None: evaluation, dropout is the identity
    scale: object            # 1 / (1 - p), a scalar of x's dtype
    backend: str = NUMPY


def drop_mask(keep, scale):
    """keep * scale: 0 or 1/(1-p), in scale's dtype (what forward multiplied x by)."""
    return keep * scale


def dropout_forward(x, p, rng):
    # x: (...) -> y: (...)
    if rng is None or p == 0.0:
        return x, DropoutCache(None, x.dtype.type(1.0))
    keep = rng.random(x.shape, dtype=np.float32) >= p  # (...) bool
    scale = x.dtype.type(1.0 / (1.0 - p))
    return x * drop_mask(keep, scale), DropoutCache(keep, scale)


def dropout_backward(dy, cache: DropoutCache):
    check_tag(cache, NUMPY, "dropout_backward")
    return dy if cache.keep is None else dy * drop_mask(cache.keep, cache.scale)
