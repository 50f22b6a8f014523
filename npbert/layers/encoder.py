"""The encoder stack: num_hidden_layers encoder layers applied in order (docs/layers/encoder.md),
on the layout's rows. Every layer computes every row (the next one reads them all as keys) but
the last when the layout has read_rows, the rows the heads read: its output row i depends on
its input only through row read_rows[i] (query and residual) and the keys and values, so it
runs on those rows alone, the whole input its attention's memory; its backward gives the whole
input's gradient, the rows' added at read_rows.

`params` is the model's flat dict; layer i reads the keys under "bert.encoder.layer.{i}.".
"""
from typing import NamedTuple

from npbert.layers.encoder_layer import EncoderLayerCache, encoder_layer_backward, encoder_layer_forward
from npbert.trace import NO_TRACE

PREFIX = "bert.encoder.layer.{}."


class EncoderCache(NamedTuple):
    layers: list[EncoderLayerCache]   # one per layer, in order (none when the forward kept no caches)


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
    return x, EncoderCache(caches)


def encoder_backward(dy, cache: EncoderCache, trace=NO_TRACE):
    # dy: (R, H) -> dx: (N, H), grads with full HF names
    grads = {}
    for i in reversed(range(len(cache.layers))):
        dy, g = encoder_layer_backward(dy, cache.layers[i], trace.scope(f"layer.{i}"))   # (N, H), the last's too
        grads.update({PREFIX.format(i) + k: v for k, v in g.items()})
    return dy, grads
