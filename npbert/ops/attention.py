"""Multi-head self-attention with an additive padding mask (docs/layers/attention.md).

    q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv       (B, T, H) each
    split heads                                            (B, A, T, D),  D = H / A
    scores  = q k^T / sqrt(D) + mask_bias                  (B, A, T, T)
    probs   = dropout(softmax(scores))                     (B, A, T, T)
    context = probs v, heads merged                        (B, T, H)
    out     = context Wo^T + bo                            (B, T, H)

The "attention core" (scores to context) is the hot op a backend may replace; the
projections around it are ordinary linear layers. Parameter names are Hugging Face's,
relative to one encoder layer: "attention.self.query.weight", ..., "attention.output.dense.bias".
"""
import math

import numpy as np

from npbert import backend
from npbert.ops.softmax import softmax_backward, softmax_forward

Q, K, V, O = ("attention.self.query", "attention.self.key", "attention.self.value",
              "attention.output.dense")


def attention_mask_bias(attention_mask, dtype):
    """(B, T) 1 = real token, 0 = padding  ->  (B, T) additive bias: 0 or the dtype's minimum.

    Hugging Face adds finfo(dtype).min; exp of it underflows to exactly 0, so a padded key
    gets exactly zero probability (and zero gradient)."""
    keep = np.asarray(attention_mask) != 0
    return np.where(keep, 0.0, np.finfo(dtype).min).astype(dtype)


def split_heads(x, num_heads):
    B, T, H = x.shape
    return x.reshape(B, T, num_heads, H // num_heads).transpose(0, 2, 1, 3)  # (B, A, T, D)


def merge_heads(x):
    B, A, T, D = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, A * D)                     # (B, T, H)


def attention_core_forward(q, k, v, mask_bias, p_drop, rng):
    # q, k, v: (B, A, T, D), mask_bias: (B, T)
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = (q @ k.swapaxes(-1, -2)) * scale          # (B, A, T, T)
    scores += mask_bias[:, None, None, :]              # padded keys -> very negative
    probs, _ = softmax_forward(scores)                 # (B, A, T, T)
    probs_dropped, drop_mask = backend.dropout_forward(probs, p_drop, rng)
    context = probs_dropped @ v                        # (B, A, T, D)
    return context, (q, k, v, probs, drop_mask, scale)


def attention_core_backward(dcontext, cache):
    # dcontext: (B, A, T, D)
    q, k, v, probs, drop_mask, scale = cache
    probs_dropped = backend.dropout_backward(probs, drop_mask)  # probs * mask again: cheaper to redo than to keep
    dv = probs_dropped.swapaxes(-1, -2) @ dcontext     # (B, A, T, D)
    dprobs = backend.dropout_backward(dcontext @ v.swapaxes(-1, -2), drop_mask)  # (B, A, T, T)
    dscores = softmax_backward(dprobs, probs)          # (B, A, T, T) gradient of the masked, scaled scores
    dqk = dscores * scale                              # (B, A, T, T) gradient of q k^T; the mask is a constant
    dq = dqk @ k                                       # (B, A, T, D)
    dk = dqk.swapaxes(-1, -2) @ q                      # (B, A, T, D)
    return dq, dk, dv


def self_attention_forward(x, mask_bias, p, num_heads, p_drop, rng):
    # x: (B, T, H), mask_bias: (B, T), p: this layer's parameters by HF name
    q, q_cache = backend.linear_forward(x, p[Q + ".weight"], p[Q + ".bias"])    # (B, T, H)
    k, k_cache = backend.linear_forward(x, p[K + ".weight"], p[K + ".bias"])    # (B, T, H)
    v, v_cache = backend.linear_forward(x, p[V + ".weight"], p[V + ".bias"])    # (B, T, H)
    context, core_cache = backend.attention_core_forward(
        split_heads(q, num_heads), split_heads(k, num_heads), split_heads(v, num_heads),
        mask_bias, p_drop, rng)                                                # (B, A, T, D)
    out, o_cache = backend.linear_forward(merge_heads(context), p[O + ".weight"], p[O + ".bias"])  # (B, T, H)
    return out, (q_cache, k_cache, v_cache, core_cache, o_cache, num_heads)


def self_attention_backward(dout, cache):
    # dout: (B, T, H) -> dx: (B, T, H), grads by HF name
    q_cache, k_cache, v_cache, core_cache, o_cache, num_heads = cache
    g = {}
    dcontext, g[O + ".weight"], g[O + ".bias"] = backend.linear_backward(dout, o_cache)  # (B, T, H)
    dq, dk, dv = backend.attention_core_backward(split_heads(dcontext, num_heads), core_cache)
    dx_q, g[Q + ".weight"], g[Q + ".bias"] = backend.linear_backward(merge_heads(dq), q_cache)
    dx_k, g[K + ".weight"], g[K + ".bias"] = backend.linear_backward(merge_heads(dk), k_cache)
    dx_v, g[V + ".weight"], g[V + ".bias"] = backend.linear_backward(merge_heads(dv), v_cache)
    return dx_q + dx_k + dx_v, g
