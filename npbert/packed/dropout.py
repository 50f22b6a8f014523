"""Dropout on packed rows that drops what the padded step drops: the padded step draws
(B, T, H) uniforms for a (B, T, H) activation (npbert/ops/dropout.py); the same draw is made
here and each packed row reads its own (b, t) row of it. Same seed, same elements dropped,
and the generator moves on exactly as in the padded step."""
from npbert import backend
from npbert.ops import DropoutCache
from npbert.packed.packing import Packing


def packed_dropout_forward(x, packing: Packing, rows, p_drop, rng):
    # x: (R, H) at the packed rows `rows` (None: every real token) -> y: (R, H), cache
    if rng is None or p_drop == 0.0:
        return x, DropoutCache(None, x.dtype.type(1.0))
    B, T = packing.shape
    u = backend.dropout_uniforms((B * T, x.shape[1]), rng)                      # (B*T, H) the padded step's draw
    return backend.dropout_with_uniforms(x, u[packing.flat_of(rows)], p_drop)  # (R, H)


def packed_dropout_backward(dy, cache):
    # dy: (R, H) -> dx: (R, H): the elements the forward kept, scaled as it scaled them
    return backend.dropout_backward(dy, cache)
