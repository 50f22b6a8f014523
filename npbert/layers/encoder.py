"""The encoder stack: num_hidden_layers encoder layers applied in order (docs/layers/encoder.md).

`params` is the model's flat dict; layer i reads the keys under "bert.encoder.layer.{i}.".
"""
from typing import NamedTuple

from npbert.layers.encoder_layer import EncoderLayerCache, encoder_layer_backward, encoder_layer_forward
from npbert.trace import NO_TRACE

PREFIX = "bert.encoder.layer.{}."


class EncoderCache(NamedTuple):
    layers: list[EncoderLayerCache]   # one per layer, in order


def layer_params(params, i):
    """The parameters of layer i, keyed relative to its prefix (no copies)."""
    prefix = PREFIX.format(i)
    return {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}


def encoder_forward(x, mask_bias, params, config, rng, trace=NO_TRACE):
    # x: (B, T, H) -> (B, T, H); trace: scope "bert.encoder"
    caches = []
    for i in range(config.num_hidden_layers):
        x, cache = encoder_layer_forward(x, mask_bias, layer_params(params, i), config, rng, trace.scope(f"layer.{i}"))
        caches.append(cache)
    return x, EncoderCache(caches)


def encoder_backward(dy, cache: EncoderCache, trace=NO_TRACE):
    # dy: (B, T, H) -> dx: (B, T, H), grads with full HF names
    grads = {}
    for i in reversed(range(len(cache.layers))):
        dy, g = encoder_layer_backward(dy, cache.layers[i], trace.scope(f"layer.{i}"))
        grads.update({PREFIX.format(i) + k: v for k, v in g.items()})
    return dy, grads
