"""The encoder stack: num_hidden_layers encoder layers applied in order (docs/layers/encoder.md),
on the layout's rows. Every layer computes every row (the next one reads them all as keys) but
the last when the layout has read_rows, the rows the heads read: its output row i depends on
its input only through row read_rows[i] (query and residual) and the keys and values, so it
runs on those rows alone, the whole input its attention's memory.

`params` is the model's flat dict; layer i reads the keys under "bert.encoder.layer.{i}.".
"""
from typing import NamedTuple

import numpy as np

from npbert.layers.encoder_layer import EncoderLayerCache, encoder_layer_backward, encoder_layer_forward
from npbert.trace import NO_TRACE

PREFIX = "bert.encoder.layer.{}."


class EncoderCache(NamedTuple):
    layers: list[EncoderLayerCache]   # one per layer, in order (none when the forward kept no caches)
    read_rows: np.ndarray | None      # (R,) the input rows the last layer ran on; None: every row


def layer_params(params, i):
    """The parameters of layer i, keyed relative to its prefix (no copies)."""
    prefix = PREFIX.format(i)
    return {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}


def encoder_forward(x, layout, params, config, rng, trace=NO_TRACE, keep_caches=True):
    # x: (N, H) -> (R, H), the last layer's output at layout.read_rows (None: every row, R = N)
    # trace: scope "bert.encoder"; keep_caches=False: forward only
    caches, L, rows = [], config.num_hidden_layers, layout.read_rows
    for i in range(L):
        p, scope = layer_params(params, i), trace.scope(f"layer.{i}")
        if i == L - 1 and rows is not None:          # queries at the rows the heads read, keys at every row
            x, cache = encoder_layer_forward(x[rows], layout.reading(), p, config, rng, scope, memory=x)  # (R, H)
        else:
            x, cache = encoder_layer_forward(x, layout, p, config, rng, scope)                            # (N, H)
        if keep_caches:
            caches.append(cache)
    return x, EncoderCache(caches, rows)


def encoder_backward(dy, cache: EncoderCache, trace=NO_TRACE):
    # dy: (R, H) -> dx: (N, H), grads with full HF names
    grads, L = {}, len(cache.layers)
    for i in reversed(range(L)):
        scope = trace.scope(f"layer.{i}")
        if i == L - 1 and cache.read_rows is not None:
            dx, dy, g = encoder_layer_backward(dy, cache.layers[i], scope)     # (R, H); memory's (N, H)
            dy[cache.read_rows] += dx                  # x[read_rows] fed the queries and residual: one add a row
        else:
            dy, g = encoder_layer_backward(dy, cache.layers[i], scope)         # (N, H)
        grads.update({PREFIX.format(i) + k: v for k, v in g.items()})
    return dy, grads
