"""Multi-head attention (docs/layers/attention.md), Hugging Face's BertSelfAttention and the
dense of BertSelfOutput, on rows:

    q = x Wq^T + bq                                        (N, H)  the queries' rows
    k, v = m Wk^T + bk, m Wv^T + bv                        (M, H)  m = memory, or x itself
    context = the layout's attention core (q, k, v)        (N, H)  per sequence, per head
    out     = context Wo^T + bo                            (N, H)

BERT's is self-attention: memory is None, keys and values come from x (M = N). With memory
(Hugging Face's encoder_hidden_states) the queries may be fewer rows than the keys: the encoder's
last layer puts its queries at the rows the heads read only (encoder.py), x = memory[query_rows]
on the layout's view layout.reading(), and the backward returns memory's gradient, x's added at
query_rows. The core (scores, softmax, dropout, times v, heads split and merged) is the only code
that differs by layout (layout.py): the padded one adds the mask bias to (B, A, T, T) scores, the
packed one gives each sequence its own scores. Parameter names are Hugging Face's, relative to one
encoder layer: "attention.self.query.weight", ..., "attention.output.dense.bias".
"""
from typing import NamedTuple

from npbert import backend
from npbert.ops import LinearCache
from npbert.trace import NO_TRACE

Q, K, V, O = ("attention.self.query", "attention.self.key", "attention.self.value",
              "attention.output.dense")


class SelfAttentionCache(NamedTuple):
    query: LinearCache
    key: LinearCache
    value: LinearCache
    core: tuple              # the layout's core cache: AttentionCoreCache (padded) or PackedAttentionCache
    output: LinearCache      # attention.output.dense
    layout: object           # whose core ran (layout.py)
    memory: bool             # keys and values came from memory, x being its rows layout.query_rows


def self_attention_forward(x, layout, params, num_heads, p_drop, rng, trace=NO_TRACE, memory=None):
    # x: (N, H) the queries' rows, memory: (M, H) the keys' and values' (None: x) -> out: (N, H), cache
    # trace: scope "bert.encoder.layer.{i}.attention"
    m = x if memory is None else memory                                                                # (M, H)
    q, q_cache = backend.linear_forward(x, params[Q + ".weight"], params[Q + ".bias"])                 # (N, H)
    k, k_cache = backend.linear_forward(m, params[K + ".weight"], params[K + ".bias"])                 # (M, H)
    v, v_cache = backend.linear_forward(m, params[V + ".weight"], params[V + ".bias"])                 # (M, H)
    trace.record_rows(("self.query", "self.key", "self.value"), (q, k, v))
    context, core = layout.attention_forward(q, k, v, num_heads, p_drop, rng, trace)                   # (N, H)
    out, o_cache = backend.linear_forward(context, params[O + ".weight"], params[O + ".bias"])         # (N, H)
    trace.record_rows(("self", "output.dense"), (context, out))
    return out, SelfAttentionCache(q_cache, k_cache, v_cache, core, o_cache, layout, memory is not None)


def self_attention_backward(dout, cache: SelfAttentionCache, trace=NO_TRACE):
    # dout: (N, H) -> dx: (N, H), grads by HF name; given memory: dmemory (M, H), x's gradient in it, grads
    g = {}
    trace.record_grad_rows("output.dense", dout)
    dcontext, g[O + ".weight"], g[O + ".bias"] = backend.linear_backward(dout, cache.output)   # (N, H)
    trace.record_grad_rows("self", dcontext)
    dq, dk, dv = cache.layout.attention_backward(dcontext, cache.core, trace)                # (N, H), (M, H) x 2
    trace.record_grad_rows(("self.value", "self.key", "self.query"), (dv, dk, dq))
    dx, g[Q + ".weight"], g[Q + ".bias"] = backend.linear_backward(dq, cache.query)           # (N, H)
    dm_k, g[K + ".weight"], g[K + ".bias"] = backend.linear_backward(dk, cache.key)           # (M, H)
    dm_v, g[V + ".weight"], g[V + ".bias"] = backend.linear_backward(dv, cache.value)         # (M, H)
    if cache.memory:                   # x = memory[query_rows]: the queries' gradient joins the keys' there,
        return cache.layout.add_at_queries(dm_k, dx) + dm_v, g    # then the values': the line below's order
    return dx + dm_k + dm_v, g             # x fed all three
