"""The encoder stack: num_hidden_layers encoder layers applied in order (docs/layers/encoder.md).

`params` is the model's flat dict; layer i reads the keys under "bert.encoder.layer.{i}.".
"""
from npbert.ops.encoder_layer import encoder_layer_backward, encoder_layer_forward

PREFIX = "bert.encoder.layer.{}."


def layer_params(params, i):
    """The parameters of layer i, keyed relative to its prefix (no copies)."""
    prefix = PREFIX.format(i)
    return {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}


def encoder_forward(x, mask_bias, params, config, rng):
    # x: (B, T, H) -> (B, T, H)
    caches = []
    for i in range(config.num_hidden_layers):
        x, cache = encoder_layer_forward(x, mask_bias, layer_params(params, i), config, rng)
        caches.append(cache)
    return x, caches


def encoder_backward(dy, caches):
    # dy: (B, T, H) -> dx: (B, T, H), grads with full HF names
    grads = {}
    for i in reversed(range(len(caches))):
        dy, g = encoder_layer_backward(dy, caches[i])
        grads.update({PREFIX.format(i) + k: v for k, v in g.items()})
    return dy, grads
