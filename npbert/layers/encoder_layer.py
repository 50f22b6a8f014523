"""One post-LN Transformer encoder layer, as in BERT (docs/layers/encoder_layer.md), on rows:

    h = LayerNorm(x[rows] + dropout(self_attention(x)))      (R, H)
    y = LayerNorm(h + dropout(feedforward(h)))                (R, H)

x holds every row (N, H): each row's keys and values. rows (None: all, R = N) are the rows
whose output is computed: output row i depends on the input only through x[rows[i]] and the
keys and values of its sequence, so the last layer of a step computes only the rows its
heads read (npbert/layers/encoder.py) and its backward adds the query side's gradient at
those rows to the key and value side's at every row.

`params` holds this layer's parameters by HF name relative to "bert.encoder.layer.{i}.".
"""
from typing import NamedTuple

from npbert import backend
from npbert.layers.attention import SelfAttentionCache, self_attention_backward, self_attention_forward
from npbert.layers.feedforward import FeedForwardCache, feedforward_backward, feedforward_forward
from npbert.layers.layout import added_at_rows, at_rows
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


def encoder_layer_forward(x, layout, rows, params, config, rng, trace=NO_TRACE):
    # x: (N, H) -> y: (R, H) at rows (None: every row); trace: scope "bert.encoder.layer.{i}"
    p_drop, eps = config.hidden_dropout_prob, config.layer_norm_eps
    a, attn_cache = self_attention_forward(x, layout, rows, params, config.num_attention_heads,
                                           config.attention_probs_dropout_prob, rng, trace.scope("attention"))  # (R, H)
    a, drop1 = layout.dropout(a, rows, p_drop, rng)                                    # (R, H)
    s1 = at_rows(x, rows) + a                                                          # the residual (R, H)
    h, ln1 = backend.layernorm_forward(s1, params[LN1 + ".weight"], params[LN1 + ".bias"], eps)   # (R, H)
    trace.record_rows(("attention.output.sum", "attention"), (s1, h))
    f, ffn_cache = feedforward_forward(h, params, config.hidden_act, trace)             # (R, H)
    f, drop2 = layout.dropout(f, rows, p_drop, rng)
    s2 = h + f
    y, ln2 = backend.layernorm_forward(s2, params[LN2 + ".weight"], params[LN2 + ".bias"], eps)   # (R, H)
    trace.record_rows(("output.sum", ""), (s2, y))
    return y, EncoderLayerCache(attn_cache, drop1, ln1, ffn_cache, drop2, ln2)


def encoder_layer_backward(dy, cache: EncoderLayerCache, trace=NO_TRACE):
    # dy: (R, H) -> dx: (N, H), grads by HF name
    g = {}
    trace.record_grad_rows("", dy)
    dsum2, g[LN2 + ".weight"], g[LN2 + ".bias"] = backend.layernorm_backward(dy, cache.output_norm)    # (R, H)
    trace.record_grad_rows("output.sum", dsum2)
    dh_ffn, g_ffn = feedforward_backward(backend.dropout_backward(dsum2, cache.output_dropout), cache.feedforward,
                                         trace)
    dh = dsum2 + dh_ffn                                 # residual: h feeds both the sum and the FFN
    trace.record_grad_rows("attention", dh)
    dsum1, g[LN1 + ".weight"], g[LN1 + ".bias"] = backend.layernorm_backward(dh, cache.attention_norm)  # (R, H)
    trace.record_grad_rows("attention.output.sum", dsum1)
    dx_attn, g_attn = self_attention_backward(backend.dropout_backward(dsum1, cache.attention_dropout),
                                              cache.attention, trace.scope("attention"))               # (N, H)
    g.update(g_ffn)
    g.update(g_attn)
    return added_at_rows(dx_attn, cache.attention.rows, dsum1), g      # residual: x[rows] feeds the sum too
