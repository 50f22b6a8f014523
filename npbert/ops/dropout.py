"""Inverted dropout: keep each element with probability 1 - p_drop and scale it by
1 / (1 - p_drop).

Randomness comes only from the numpy.random.Generator passed in; rng=None (or p_drop=0) means
evaluation mode, where dropout is the identity. The uniforms are always drawn in float32,
so a float32 and a float64 run with the same seed drop the same elements.
"""
from typing import NamedTuple

import numpy as np


class DropoutCache(NamedTuple):
    keep: np.ndarray | None  # (...) bool, the elements kept; None: evaluation, dropout is the identity
    scale: object            # 1 / (1 - p_drop), a scalar of x's dtype


def drop_mask(keep, scale):
    """keep * scale: 0 or 1/(1-p_drop), in scale's dtype (what forward multiplied x by)."""
    return keep * scale


def dropout_uniforms(shape, rng):
    """The uniforms dropout draws for an x of this shape (float32, whatever x's dtype)."""
    return rng.random(shape, dtype=np.float32)


def dropout_forward(x, p_drop, rng):
    # x: (...) -> y: (...)
    if rng is None or p_drop == 0.0:
        return x, DropoutCache(None, x.dtype.type(1.0))
    return dropout_with_uniforms(x, dropout_uniforms(x.shape, rng), p_drop)


def dropout_with_uniforms(x, u, p_drop):
    # x: (...), u: (...) float32 uniforms drawn for it -> y: (...); keeps where u >= p_drop
    keep = u >= p_drop                                       # (...) bool
    scale = x.dtype.type(1.0 / (1.0 - p_drop))
    return x * drop_mask(keep, scale), DropoutCache(keep, scale)


def dropout_backward(dy, cache: DropoutCache):
    return dy if cache.keep is None else dy * drop_mask(cache.keep, cache.scale)
