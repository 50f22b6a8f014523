"""Multi-head self-attention with an additive padding mask (docs/layers/attention.md).

    q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv       (B, T, H) each
    split heads                                            (B, A, T, D),  D = H / A
    context = attention_core(q, k, v, mask_bias)           (B, A, T, D)  npbert/ops/attention_core.py
    heads merged                                           (B, T, H)
    out     = context Wo^T + bo                            (B, T, H)

The core (scores, softmax, dropout, times v) is the hot op a backend may replace; the
projections around it are ordinary linear layers. Parameter names are Hugging Face's,
relative to one encoder layer: "attention.self.query.weight", ..., "attention.output.dense.bias".
"""
from typing import NamedTuple

from npbert import backend
from npbert.ops import AttentionCoreCache, LinearCache, attention_scores, merge_heads, score_grads, split_heads
from npbert.trace import NO_TRACE

Q, K, V, O = ("attention.self.query", "attention.self.key", "attention.self.value",
              "attention.output.dense")


class SelfAttentionCache(NamedTuple):
    query: LinearCache
    key: LinearCache
    value: LinearCache
    core: AttentionCoreCache
    output: LinearCache      # attention.output.dense
    num_heads: int


def self_attention_forward(x, mask_bias, params, num_heads, p_drop, rng, trace=NO_TRACE):
    # x: (B, T, H), mask_bias: (B, T), params: this layer's by HF name
    # trace: scope "bert.encoder.layer.{i}.attention"
    q, q_cache = backend.linear_forward(x, params[Q + ".weight"], params[Q + ".bias"])  # (B, T, H)
    k, k_cache = backend.linear_forward(x, params[K + ".weight"], params[K + ".bias"])  # (B, T, H)
    v, v_cache = backend.linear_forward(x, params[V + ".weight"], params[V + ".bias"])  # (B, T, H)
    qh, kh = split_heads(q, num_heads), split_heads(k, num_heads)                     # (B, A, T, D)
    context, core_cache = backend.attention_core_forward(qh, kh, split_heads(v, num_heads), mask_bias, p_drop,
                                                         rng)                          # (B, A, T, D)
    context = merge_heads(context)                                                     # (B, T, H)
    out, o_cache = backend.linear_forward(context, params[O + ".weight"], params[O + ".bias"])  # (B, T, H)
    trace.record(("self.query", "self.key", "self.value"), (q, k, v))
    trace.record("self.scores", lambda: attention_scores(qh, kh, mask_bias)[0])  # made again: the kernel keeps none
    trace.record(("self.probs", "self", "output.dense"), (core_cache.probs, context, out))
    return out, SelfAttentionCache(q_cache, k_cache, v_cache, core_cache, o_cache, num_heads)


def self_attention_backward(dout, cache: SelfAttentionCache, trace=NO_TRACE):
    # dout: (B, T, H) -> dx: (B, T, H), grads by HF name
    g = {}
    trace.record_grad("output.dense", dout)
    dcontext, g[O + ".weight"], g[O + ".bias"] = backend.linear_backward(dout, cache.output)   # (B, T, H)
    trace.record_grad("self", dcontext)
    dcontext = split_heads(dcontext, cache.num_heads)                                         # (B, A, T, D)
    # made again, the reference's way, only when traced: the kernel keeps them in scratch memory
    trace.record_grad(("self.probs", "self.scores"), lambda: score_grads(dcontext, cache.core))
    dq, dk, dv = (merge_heads(d) for d in backend.attention_core_backward(dcontext, cache.core))  # (B, T, H) each
    trace.record_grad(("self.value", "self.key", "self.query"), (dv, dk, dq))
    dx_q, g[Q + ".weight"], g[Q + ".bias"] = backend.linear_backward(dq, cache.query)
    dx_k, g[K + ".weight"], g[K + ".bias"] = backend.linear_backward(dk, cache.key)
    dx_v, g[V + ".weight"], g[V + ".bias"] = backend.linear_backward(dv, cache.value)
    return dx_q + dx_k + dx_v, g
