"""The encoder stack: num_hidden_layers encoder layers applied in order (docs/layers/encoder.md),
on the layout's rows. Every layer computes every row (the next one reads them all as keys)
but the last, which computes the rows the heads read (layout.read_rows; None: every row).

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
    # x: (N, H) -> (R, H) at layout.read_rows; trace: scope "bert.encoder"; keep_caches=False: forward only
    caches, L = [], config.num_hidden_layers
    for i in range(L):
        rows = layout.read_rows if i == L - 1 else None
        x, cache = encoder_layer_forward(x, layout, rows, layer_params(params, i), config, rng,
                                         trace.scope(f"layer.{i}"))          # (N, H); the last (R, H)
        if keep_caches:
            caches.append(cache)
    return x, EncoderCache(caches)


def encoder_backward(dy, cache: EncoderCache, trace=NO_TRACE):
    # dy: (R, H) -> dx: (N, H), grads with full HF names
    grads = {}
    for i in reversed(range(len(cache.layers))):
        dy, g = encoder_layer_backward(dy, cache.layers[i], trace.scope(f"layer.{i}"))
        grads.update({PREFIX.format(i) + k: v for k, v in g.items()})
    return dy, grads
