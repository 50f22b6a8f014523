"""One post-LN Transformer encoder layer, as in BERT (docs/layers/encoder_layer.md):

    h = LayerNorm(x + dropout(self_attention(x)))
    y = LayerNorm(h + dropout(feedforward(h)))

`p` holds this layer's parameters by HF name relative to "bert.encoder.layer.{i}.".
"""
from npbert import backend
from npbert.ops.attention import self_attention_backward, self_attention_forward
from npbert.ops.feedforward import feedforward_backward, feedforward_forward

LN1, LN2 = "attention.output.LayerNorm", "output.LayerNorm"


def encoder_layer_forward(x, mask_bias, p, config, rng):
    # x: (B, T, H), mask_bias: (B, T)
    a, attn_cache = self_attention_forward(x, mask_bias, p, config.num_attention_heads,
                                           config.attention_probs_dropout_prob, rng)   # (B, T, H)
    a, drop1 = backend.dropout_forward(a, config.hidden_dropout_prob, rng)
    h, ln1 = backend.layernorm_forward(x + a, p[LN1 + ".weight"], p[LN1 + ".bias"], config.layer_norm_eps)
    f, ffn_cache = feedforward_forward(h, p, config.hidden_act)                        # (B, T, H)
    f, drop2 = backend.dropout_forward(f, config.hidden_dropout_prob, rng)
    y, ln2 = backend.layernorm_forward(h + f, p[LN2 + ".weight"], p[LN2 + ".bias"], config.layer_norm_eps)
    return y, (attn_cache, drop1, ln1, ffn_cache, drop2, ln2)


def encoder_layer_backward(dy, cache):
    # dy: (B, T, H) -> dx: (B, T, H), grads by HF name
    attn_cache, drop1, ln1, ffn_cache, drop2, ln2 = cache
    g = {}
    dsum2, g[LN2 + ".weight"], g[LN2 + ".bias"] = backend.layernorm_backward(dy, ln2)
    dh_ffn, g_ffn = feedforward_backward(backend.dropout_backward(dsum2, drop2), ffn_cache)
    dh = dsum2 + dh_ffn                                 # residual: h feeds both the sum and the FFN
    dsum1, g[LN1 + ".weight"], g[LN1 + ".bias"] = backend.layernorm_backward(dh, ln1)
    dx_attn, g_attn = self_attention_backward(backend.dropout_backward(dsum1, drop1), attn_cache)
    g.update(g_ffn)
    g.update(g_attn)
    return dsum1 + dx_attn, g
