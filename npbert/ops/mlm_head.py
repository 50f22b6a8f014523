"""The masked-LM head, computed only at the masked positions, as the original BERT does
(docs/layers/mlm_head.md):

    t      = LayerNorm(gelu(W_t h[positions] + b_t))          (N, H)
    logits = t E^T + bias                                     (N, V)

The decoder is tied to the word embeddings E ("bert.embeddings.word_embeddings.weight"),
so its gradient is returned under that name and the model adds it to the embedding's.
`positions` are flat indices into the B*T tokens of the batch.
"""
import numpy as np

from npbert import backend

DENSE, LN, BIAS = "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias"
WORD = "bert.embeddings.word_embeddings.weight"


def mlm_head_forward(h, positions, params, config):
    # h: (B, T, H), positions: (N,) flat indices into B*T
    B, T, H = h.shape
    hs = h.reshape(B * T, H)[positions]                                          # (N, H)
    t, dense_cache = backend.linear_gelu_forward(hs, params[DENSE + ".weight"], params[DENSE + ".bias"],
                                                 config.hidden_act)                 # (N, H)
    t, ln_cache = backend.layernorm_forward(t, params[LN + ".weight"], params[LN + ".bias"], config.layer_norm_eps)
    logits, dec_cache = backend.linear_forward(t, params[WORD], params[BIAS])    # (N, V) tied decoder
    return logits, (dense_cache, ln_cache, dec_cache, positions, h.shape)


def mlm_head_backward(dlogits, cache):
    # dlogits: (N, V) -> dh: (B, T, H), grads by HF name (WORD holds the decoder's share only)
    dense_cache, ln_cache, dec_cache, positions, h_shape = cache
    g = {}
    dt, g[WORD], g[BIAS] = backend.linear_backward(dlogits, dec_cache)           # (N, H)
    dt, g[LN + ".weight"], g[LN + ".bias"] = backend.layernorm_backward(dt, ln_cache)
    dhs, g[DENSE + ".weight"], g[DENSE + ".bias"] = backend.linear_gelu_backward(dt, dense_cache)  # (N, H)
    B, T, H = h_shape
    dh = np.zeros((B * T, H), dtype=dlogits.dtype)
    np.add.at(dh, positions, dhs)                                                # a position listed twice sums
    return dh.reshape(B, T, H), g
