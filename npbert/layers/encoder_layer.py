"""One post-LN Transformer encoder layer, as in BERT (docs/layers/encoder_layer.md), on rows (N, H):

    h = LayerNorm(x + dropout(self_attention(x)))
    y = LayerNorm(h + dropout(feedforward(h)))

memory (None in BERT) is the attention's keys and values (Hugging Face's encoder_hidden_states):
given it, x holds only the rows whose output is wanted, memory's rows at the layout's query_rows
(encoder.py runs the last layer so, at the rows the heads read, on layout.reading()), and the
backward returns memory's gradient, x's added at those rows.

`params` holds this layer's parameters by HF name relative to "bert.encoder.layer.{i}.".
"""
from typing import NamedTuple

from npbert import backend
from npbert.layers.attention import SelfAttentionCache, self_attention_backward, self_attention_forward
from npbert.layers.feedforward import FeedForwardCache, feedforward_backward, feedforward_forward
from npbert.ops import DropoutCache, LayerNormCache
from npbert.trace import NO_TRACE

LN1, LN2 = "attention.output.LayerNorm", "output.LayerNorm"


class EncoderLayerCache(NamedTuple):
    attention: SelfAttentionCache
    attention_dropout: DropoutCache   # on the attention's output, before the residual
    attention_norm: LayerNormCache    # attention.output.LayerNorm
    feedforward: FeedForwardCache
    output_dropout: DropoutCache      # on the feed-forward's output, before the residual
    output_norm: LayerNormCache       # output.LayerNorm


def encoder_layer_forward(x, layout, params, config, rng, trace=NO_TRACE, memory=None):
    # x: (N, H) -> y: (N, H); memory: (M, H) the attention's keys and values (None: x)
    # trace: scope "bert.encoder.layer.{i}"
    p_drop, eps = config.hidden_dropout_prob, config.layer_norm_eps
    a, attn_cache = self_attention_forward(x, layout, params, config.num_attention_heads,
                                           config.attention_probs_dropout_prob, rng, trace.scope("attention"), memory)
    a, drop1 = layout.dropout(a, p_drop, rng)
    s1 = x + a                                                                         # the residual
    h, ln1 = backend.layernorm_forward(s1, params[LN1 + ".weight"], params[LN1 + ".bias"], eps)
    trace.record_rows(("attention.output.sum", "attention"), (s1, h))
    f, ffn_cache = feedforward_forward(h, params, config.hidden_act, trace)
    f, drop2 = layout.dropout(f, p_drop, rng)
    s2 = h + f
    y, ln2 = backend.layernorm_forward(s2, params[LN2 + ".weight"], params[LN2 + ".bias"], eps)
    trace.record_rows(("output.sum", ""), (s2, y))
    return y, EncoderLayerCache(attn_cache, drop1, ln1, ffn_cache, drop2, ln2)


def encoder_layer_backward(dy, cache: EncoderLayerCache, trace=NO_TRACE):
    # dy: (N, H) -> dx: (N, H), grads by HF name; given memory: dmemory (M, H), x's gradient in it, grads
    g = {}
    trace.record_grad_rows("", dy)
    dsum2, g[LN2 + ".weight"], g[LN2 + ".bias"] = backend.layernorm_backward(dy, cache.output_norm)
    trace.record_grad_rows("output.sum", dsum2)
    dh_ffn, g_ffn = feedforward_backward(backend.dropout_backward(dsum2, cache.output_dropout), cache.feedforward,
                                         trace)
    dh = dsum2 + dh_ffn                                 # residual: h feeds both the sum and the FFN
    trace.record_grad_rows("attention", dh)
    dsum1, g[LN1 + ".weight"], g[LN1 + ".bias"] = backend.layernorm_backward(dh, cache.attention_norm)
    trace.record_grad_rows("attention.output.sum", dsum1)
    dx_attn, g_attn = self_attention_backward(backend.dropout_backward(dsum1, cache.attention_dropout),
                                              cache.attention, trace.scope("attention"))  # (N, H); memory's (M, H)
    g.update(g_ffn)
    g.update(g_attn)
    if cache.attention.memory:                          # residual: x = memory[query_rows] feeds the sum too
        return cache.attention.layout.add_at_queries(dx_attn, dsum1), g
    return dsum1 + dx_attn, g                           # residual: x feeds the sum too
