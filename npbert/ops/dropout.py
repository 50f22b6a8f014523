"""Inverted dropout: keep each element with probability 1 - p_drop and scale it by
1 / (1 - p_drop); rng=None (or p_drop=0) means evaluation, where dropout is the identity.

The randomness is counter-based (docs/layers/dropout.md): an element's uniform is a pure
function of a 64-bit key and the element's index, so a step computes the uniforms of the
elements it has and no others, in any order, on any thread, and a port reproduces the masks
with a few integer operations (no NumPy generator to emulate):

    mix64(z)         = SplitMix64's output function (below), arithmetic mod 2^64
    splitmix64(s, n) = mix64(s + (n + 1) * 0x9E3779B97F4A7C15): the n-th output (from 0) of SplitMix64 seeded with s
    u(key, i)        = (splitmix64(key, i) >> 40) / 2^24          24 bits, in [0, 1), exact in float32 and float64
    keep(i)          = u(key, i) >= p_drop

i is the element's flat index in the padded tensor: (b*T + t)*H + h for a hidden state, ((b*A
+ a)*T + query)*T + key for an attention probability, whatever the layout computes; so the
packed step drops exactly what the padded one drops. Each dropout call takes one key
(dropout_key): from a DropoutStream(seed, step), the k-th call of the step (k from 0, counting
only calls that drop: p_drop > 0 and not evaluating) gets splitmix64(splitmix64(seed, step), k);
from a numpy.random.Generator, its next 64-bit integer.
"""
from typing import NamedTuple

import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)                 # 2^64 / golden ratio: SplitMix64's increment
MIX1, MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
BITS = 24                                              # bits of a uniform: (z >> 40) / 2^24


class DropoutCache(NamedTuple):
    keep: np.ndarray | None  # (...) bool, the elements kept; None: evaluation, dropout is the identity
    scale: object            # 1 / (1 - p_drop), a scalar of x's dtype


def splitmix64(seed, n):
    """The n-th output (n from 0; an int or a uint64 array) of SplitMix64 seeded with seed, as uint64."""
    with np.errstate(over="ignore"):                   # uint64 arithmetic wraps mod 2^64, as intended
        z = np.asarray(seed, np.uint64) + (np.asarray(n, np.uint64) + np.uint64(1)) * GOLDEN
        z = (z ^ (z >> np.uint64(30))) * MIX1
        z = (z ^ (z >> np.uint64(27))) * MIX2
    return z ^ (z >> np.uint64(31))


def dropout_uniforms(key, index):
    """u(key, i) for the flat indices `index` (a uint64/int64 array): float64 in [0, 1), 24 bits each."""
    return (splitmix64(np.uint64(key), index) >> np.uint64(64 - BITS)).astype(np.float64) / 2.0 ** BITS


class DropoutStream:
    """The dropout of one training step: a pure function of (seed, step), its calls numbered in
    the order the forward makes them (the training loop makes one per step)."""

    def __init__(self, seed: int, step: int):
        self.step_key = int(splitmix64(np.uint64(seed % 2 ** 64), step))
        self.calls = 0

    def next_key(self) -> int:
        key = int(splitmix64(np.uint64(self.step_key), self.calls))
        self.calls += 1
        return key


def dropout_key(rng) -> int:
    """The 64-bit key of the next dropout call: from a DropoutStream, or a numpy Generator's next draw."""
    if isinstance(rng, DropoutStream):
        return rng.next_key()
    return int(rng.integers(0, 2 ** 64, dtype=np.uint64))


def drop_mask(keep, scale):
    """keep * scale: 0 or 1/(1-p_drop), in scale's dtype (what forward multiplied x by)."""
    return keep * scale


def dropout_forward(x, p_drop, rng):
    # x: (...) -> y: (...); element i of x (flat, C order) is index i
    if rng is None or p_drop == 0.0:
        return x, DropoutCache(None, x.dtype.type(1.0))
    y, cache = dropout_rows_forward(x.reshape(-1, x.shape[-1] if x.ndim else 1), p_drop, dropout_key(rng))
    return y.reshape(x.shape), DropoutCache(cache.keep.reshape(x.shape), cache.scale)


def dropout_rows_forward(x, p_drop, key, rows=None):
    # x: (R, W) rows of a (*, W) tensor, rows: (R,) int, where each row is in it (None: 0, 1, ..., R - 1)
    # -> y: (R, W); element j of row r has index rows[r] * W + j
    R, W = x.shape
    rows = np.arange(R) if rows is None else np.asarray(rows)
    index = rows.astype(np.uint64)[:, None] * np.uint64(W) + np.arange(W, dtype=np.uint64)   # (R, W)
    keep = dropout_uniforms(key, index) >= p_drop                                           # (R, W) bool
    scale = x.dtype.type(1.0 / (1.0 - p_drop))
    return x * drop_mask(keep, scale), DropoutCache(keep, scale)


def dropout_backward(dy, cache: DropoutCache):
    return dy if cache.keep is None else dy * drop_mask(cache.keep, cache.scale)
