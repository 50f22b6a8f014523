"""The encoder layer's backward exercise (docs/layers/encoder_layer.md): given npbert's forward and its
cache, put the sublayers' backwards together, in reverse, with the two residuals. The gradients are
compared in the order the backward reaches them, so the first one off is where it goes wrong."""
import dataclasses

import numpy as np

from npbert.exercises.diagnose import Mistake
from npbert.exercises.grade import Exercise
from npbert.golden.cases import golden_dims
from npbert.layers.attention import self_attention_backward
from npbert.layers.encoder_layer import encoder_layer_backward, encoder_layer_forward
from npbert.layers.feedforward import feedforward_backward
from npbert.layers.layout import Padded
from npbert.ops import dropout_backward, layernorm_backward

BACKWARD_ORDER = ("output.LayerNorm.weight", "output.LayerNorm.bias", "output.dense.weight", "output.dense.bias",
                  "intermediate.dense.weight", "intermediate.dense.bias", "attention.output.LayerNorm.weight",
                  "attention.output.LayerNorm.bias", "attention.output.dense.weight", "attention.output.dense.bias",
                  "attention.self.value.weight", "attention.self.value.bias", "attention.self.key.weight",
                  "attention.self.key.bias", "attention.self.query.weight", "attention.self.query.bias", "x")


def _layer_params(t):
    return {k: v for k, v in t.items() if k in BACKWARD_ORDER and k != "x"}


def _run(f, t, c, config=None, rng=None):
    """The layer on the golden case's rows: every position of its (B, T) batch (the padded layout,
    whose mask is where the mask bias is 0), row b*T + t; the output back as (B, T, H)."""
    layout = Padded(t["mask_bias"] == 0, t["x"].dtype)
    y, cache = encoder_layer_forward(layout.rows_of(t["x"]), layout, _layer_params(t),
                                     config or golden_dims().config(), rng)              # (B*T, H)
    return layout.batched(y), cache                                                      # (B, T, H)


def _backward(f, dy, cache):
    layout = cache.attention.layout
    dx, grads = f[0](layout.rows_of(dy), cache)                                          # (B*T, H) rows
    return {"x": layout.batched(dx), **grads}                                            # (B, T, H)


def _with_slip(t, slip) -> dict:
    """npbert's backward on the golden inputs with one slip -> every gradient: 'h' (the residual at h
    dropped), 'x' (the residual at x dropped) or 'norms' (each LayerNorm's backward given the other's cache)."""
    _, c = _run(None, t, None)
    layout = c.attention.layout
    first, second = (c.attention_norm, c.output_norm) if slip == "norms" else (c.output_norm, c.attention_norm)
    g = {}
    dy = layout.rows_of(t["grad/out"])                                                   # (B*T, H)
    dsum2, g["output.LayerNorm.weight"], g["output.LayerNorm.bias"] = layernorm_backward(dy, first)
    dh_ffn, g_ffn = feedforward_backward(dropout_backward(dsum2, c.output_dropout), c.feedforward)
    dsum1, g["attention.output.LayerNorm.weight"], g["attention.output.LayerNorm.bias"] = layernorm_backward(
        dh_ffn if slip == "h" else dsum2 + dh_ffn, second)
    dx_attn, g_attn = self_attention_backward(dropout_backward(dsum1, c.attention_dropout), c.attention)
    return {"x": layout.batched(dx_attn if slip == "x" else dsum1 + dx_attn), **g, **g_ffn, **g_attn}


SLIPS = {
    "h": "the residual around the feed-forward is missing in the backward: h feeds both the sum h + ffn(h) and the "
         "feed-forward, so dh = dsum2 + (the feed-forward's dx)",
    "x": "the residual around attention is missing in the backward: x feeds both x + attention(x) and the "
         "attention, so dx = dsum1 + (the attention's dx)",
    "norms": "the two LayerNorms' caches are swapped: the output LayerNorm (cache.output_norm) comes first going "
             "back, then cache.attention_norm",
}
MISTAKES = tuple(Mistake(name, lambda t, n=name, s=slip: _with_slip(t, s)[n], says)
                 for slip, says in SLIPS.items() for name in BACKWARD_ORDER)


def with_dropout(functions, t, c):
    """The finite-difference check with dropout on (0.1, the same mask at every call): the golden
    vectors have it off, so this is where a missing dropout backward shows."""
    config = dataclasses.replace(golden_dims().config(), hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    inputs = {k: t[k].copy() for k in BACKWARD_ORDER}
    run = lambda p: _run(functions, {**t, **p}, c, config, np.random.default_rng(1))          # noqa: E731
    return inputs, run, lambda d, cache: _backward(functions, d, cache)


ENCODER_LAYER = Exercise(
    "encoder_layer", "docs/layers/encoder_layer.md", "encoder_layer", ("encoder_layer_backward",),
    (encoder_layer_backward,), _run, _backward, BACKWARD_ORDER, axes={"out": ("B", "T", "H"), "x": ("B", "T", "H")},
    mistakes=MISTAKES, gradcheck=with_dropout)
