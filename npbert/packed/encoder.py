"""The encoder (npbert/layers/encoder_layer.py, attention.py) on packed rows:

    per layer, x: (N, H) every real token
        q = x[rows] Wq^T + bq          (R, H)   rows: the queries this layer computes
        k, v = x Wk^T + bk, x Wv^T + bv (N, H)  keys and values at every real token
        a = packed_attention(q, k, v) Wo^T + bo                     (R, H)
        h = LayerNorm(x[rows] + dropout(a))                         (R, H)
        y = LayerNorm(h + dropout(feedforward(h)))                  (R, H)

Every layer but the last has rows = all N real tokens (the next layer needs them all as keys).
The last layer's rows are those the heads read (read_rows): its output row i depends on the
layer's input only through x[rows[i]] and the keys/values of its sequence, so computing the
rest would change nothing the loss reads. Its backward scatters the query side's gradient
back to those rows and adds the key/value side's to every row.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.layers.attention import K, O, Q, V
from npbert.layers.encoder import PREFIX, layer_params
from npbert.layers.encoder_layer import LN1, LN2
from npbert.layers.feedforward import FeedForwardCache, feedforward_backward, feedforward_forward
from npbert.ops import DropoutCache, LayerNormCache, LinearCache
from npbert.ops.packed_attention import PackedAttentionCache
from npbert.packed.dropout import packed_dropout_backward, packed_dropout_forward
from npbert.packed.packing import Packing


class PackedAttentionLayerCache(NamedTuple):
    query: LinearCache
    key: LinearCache
    value: LinearCache
    core: PackedAttentionCache
    output: LinearCache


class PackedLayerCache(NamedTuple):
    attention: PackedAttentionLayerCache
    attention_dropout: DropoutCache
    attention_norm: LayerNormCache
    feedforward: FeedForwardCache
    output_dropout: DropoutCache
    output_norm: LayerNormCache
    rows: np.ndarray | None     # (R,) the packed rows this layer computed queries for; None: all


def packed_self_attention_forward(x, xq, packing: Packing, rows, params, config, rng):
    # x: (N, H) keys' and values' rows, xq: (R, H) the queries' -> (R, H)
    B, T = packing.shape
    A, p_drop = config.num_attention_heads, config.attention_probs_dropout_prob
    q, q_cache = backend.linear_forward(xq, params[Q + ".weight"], params[Q + ".bias"])   # (R, H)
    k, k_cache = backend.linear_forward(x, params[K + ".weight"], params[K + ".bias"])    # (N, H)
    v, v_cache = backend.linear_forward(x, params[V + ".weight"], params[V + ".bias"])    # (N, H)
    dropping = rng is not None and p_drop != 0.0
    u = backend.dropout_uniforms((B, A, T, T), rng) if dropping else None              # the padded core's draw
    context, core = backend.packed_attention_forward(q, k, v, packing.layout(rows), A, u, p_drop)  # (R, H)
    out, o_cache = backend.linear_forward(context, params[O + ".weight"], params[O + ".bias"])     # (R, H)
    return out, PackedAttentionLayerCache(q_cache, k_cache, v_cache, core, o_cache)


def packed_self_attention_backward(dout, cache: PackedAttentionLayerCache):
    # dout: (R, H) -> dxq: (R, H) through the queries, dx: (N, H) through keys and values, grads
    g = {}
    dcontext, g[O + ".weight"], g[O + ".bias"] = backend.linear_backward(dout, cache.output)   # (R, H)
    dq, dk, dv = backend.packed_attention_backward(dcontext, cache.core)                      # (R|N, H)
    dxq, g[Q + ".weight"], g[Q + ".bias"] = backend.linear_backward(dq, cache.query)          # (R, H)
    dx_k, g[K + ".weight"], g[K + ".bias"] = backend.linear_backward(dk, cache.key)          # (N, H)
    dx_v, g[V + ".weight"], g[V + ".bias"] = backend.linear_backward(dv, cache.value)        # (N, H)
    return dxq, dx_k + dx_v, g


def packed_layer_forward(x, packing: Packing, rows, params, config, rng):
    # x: (N, H) -> y: (R, H) at `rows` (None: every row, R = N)
    p_drop, eps = config.hidden_dropout_prob, config.layer_norm_eps
    xq = x if rows is None else x[rows]                                                     # (R, H)
    a, attn = packed_self_attention_forward(x, xq, packing, rows, params, config, rng)      # (R, H)
    a, drop1 = packed_dropout_forward(a, packing, rows, p_drop, rng)
    h, ln1 = backend.layernorm_forward(xq + a, params[LN1 + ".weight"], params[LN1 + ".bias"], eps)  # (R, H)
    f, ffn = feedforward_forward(h, params, config.hidden_act)                              # (R, H)
    f, drop2 = packed_dropout_forward(f, packing, rows, p_drop, rng)
    y, ln2 = backend.layernorm_forward(h + f, params[LN2 + ".weight"], params[LN2 + ".bias"], eps)    # (R, H)
    return y, PackedLayerCache(attn, drop1, ln1, ffn, drop2, ln2, rows)


def packed_layer_backward(dy, cache: PackedLayerCache):
    # dy: (R, H) -> dx: (N, H), grads by HF name relative to the layer
    g = {}
    dsum2, g[LN2 + ".weight"], g[LN2 + ".bias"] = backend.layernorm_backward(dy, cache.output_norm)
    dh_ffn, g_ffn = feedforward_backward(packed_dropout_backward(dsum2, cache.output_dropout), cache.feedforward)
    dsum1, g[LN1 + ".weight"], g[LN1 + ".bias"] = backend.layernorm_backward(dsum2 + dh_ffn, cache.attention_norm)
    dxq, dx_kv, g_attn = packed_self_attention_backward(packed_dropout_backward(dsum1, cache.attention_dropout),
                                                        cache.attention)
    g.update(g_ffn)
    g.update(g_attn)
    if cache.rows is None:
        return dsum1 + (dxq + dx_kv), g                 # the padded layer's order of the sums
    dx = dx_kv                                                                              # (N, H)
    dx[cache.rows] += dsum1 + dxq                       # rows are unique: one add each
    return dx, g


def packed_encoder_forward(x, packing: Packing, params, config, rng, read_rows=None, keep_caches=True):
    # x: (N, H) -> (R, H) at read_rows (None: every row); caches: one per layer (none if not keep_caches)
    caches = []
    L = config.num_hidden_layers
    for i in range(L):
        rows = read_rows if i == L - 1 else None
        x, cache = packed_layer_forward(x, packing, rows, layer_params(params, i), config, rng)
        if keep_caches:
            caches.append(cache)
    return x, caches


def packed_encoder_backward(dy, caches):
    # dy: (R, H) -> dx: (N, H), grads with full HF names
    grads = {}
    for i in reversed(range(len(caches))):
        dy, g = packed_layer_backward(dy, caches[i])
        grads.update({PREFIX.format(i) + k: v for k, v in g.items()})
    return dy, grads
