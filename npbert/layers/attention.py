"""Multi-head self-attention (docs/layers/attention.md), on the layout's rows:

    q = x[rows] Wq^T + bq                                  (R, H)  the rows whose output is computed
    k, v = x Wk^T + bk, x Wv^T + bv                        (N, H)  keys and values at every row
    context = the layout's attention core (q, k, v)        (R, H)  per sequence, per head
    out     = context Wo^T + bo                            (R, H)

rows is None (R = N, every row a query) but in the last layer of a step that computes only
the rows its heads read. The core (scores, softmax, dropout, times v, heads split and merged)
is the only code that differs by layout (layout.py): the padded one adds the mask bias to
(B, A, T, T) scores, the packed one gives each sequence its own scores. Parameter names are
Hugging Face's, relative to one encoder layer: "attention.self.query.weight", ...,
"attention.output.dense.bias".
"""
from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.layers.layout import added_at_rows, at_rows
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
    rows: np.ndarray | None  # (R,) the rows whose queries were computed; None: every row


def self_attention_forward(x, layout, rows, params, num_heads, p_drop, rng, trace=NO_TRACE):
    # x: (N, H) every row, params: this layer's by HF name -> out: (R, H) at rows (None: every row)
    # trace: scope "bert.encoder.layer.{i}.attention"
    q, q_cache = backend.linear_forward(at_rows(x, rows), params[Q + ".weight"], params[Q + ".bias"])  # (R, H)
    k, k_cache = backend.linear_forward(x, params[K + ".weight"], params[K + ".bias"])                 # (N, H)
    v, v_cache = backend.linear_forward(x, params[V + ".weight"], params[V + ".bias"])                 # (N, H)
    trace.record_rows(("self.query", "self.key", "self.value"), (q, k, v))
    context, core = layout.attention_forward(q, k, v, rows, num_heads, p_drop, rng, trace)             # (R, H)
    out, o_cache = backend.linear_forward(context, params[O + ".weight"], params[O + ".bias"])         # (R, H)
    trace.record_rows(("self", "output.dense"), (context, out))
    return out, SelfAttentionCache(q_cache, k_cache, v_cache, core, o_cache, layout, rows)


def self_attention_backward(dout, cache: SelfAttentionCache, trace=NO_TRACE):
    # dout: (R, H) -> dx: (N, H) (x feeds the queries at rows, the keys and values everywhere), grads by HF name
    g = {}
    trace.record_grad_rows("output.dense", dout)
    dcontext, g[O + ".weight"], g[O + ".bias"] = backend.linear_backward(dout, cache.output)   # (R, H)
    trace.record_grad_rows("self", dcontext)
    dq, dk, dv = cache.layout.attention_backward(dcontext, cache.core, trace)                # (R, H), (N, H) x 2
    trace.record_grad_rows(("self.value", "self.key", "self.query"), (dv, dk, dq))
    dx_q, g[Q + ".weight"], g[Q + ".bias"] = backend.linear_backward(dq, cache.query)         # (R, H)
    dx_k, g[K + ".weight"], g[K + ".bias"] = backend.linear_backward(dk, cache.key)           # (N, H)
    dx_v, g[V + ".weight"], g[V + ".bias"] = backend.linear_backward(dv, cache.value)         # (N, H)
    return added_at_rows(dx_k, cache.rows, dx_q) + dx_v, g
