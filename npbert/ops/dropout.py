"""Inverted dropout: keep each element with probability 1-p and scale it by 1/(1-p).

Randomness comes only from the numpy.random.Generator passed in; rng=None (or p=0) means
evaluation mode, where dropout is the identity. The uniforms are always drawn in float32,
so a float32 and a float64 run with the same seed drop the same elements.
"""
import numpy as np


def dropout_forward(x, p, rng):
    # x: (...) -> y: (...)
    if rng is None or p == 0.0:
        return x, None
    keep = rng.random(x.shape, dtype=np.float32) >= p  # (...) bool
    scale = np.asarray(1.0 / (1.0 - p), dtype=x.dtype)
    mask = keep * scale                                # (...) 0 or 1/(1-p), dtype of x
    return x * mask, mask


def dropout_backward(dy, mask):
    return dy if mask is None else dy * mask
