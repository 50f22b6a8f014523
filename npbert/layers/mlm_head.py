"""The masked-LM head, computed only at the masked positions, as the original BERT does
(docs/layers/mlm_head.md):

    t      = LayerNorm(gelu(W_t h[positions] + b_t))          (N, H)
    logits = t E^T + bias                                     (N, V)

The decoder is tied to the word embeddings E ("bert.embeddings.word_embeddings.weight"),
so its gradient is returned under that name and the model adds it to the embedding's.
`positions` are flat indices into the B*T tokens of the batch.
"""
from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.ops import LayerNormCache, LinearCache, LinearGeluCache, pre_activation_grad
from npbert.trace import NO_TRACE

DENSE, LN, BIAS = "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias"
WORD = "bert.embeddings.word_embeddings.weight"


class MlmHeadCache(NamedTuple):
    transform: LinearGeluCache   # cls.predictions.transform.dense + GELU
    norm: LayerNormCache         # cls.predictions.transform.LayerNorm
    decoder: LinearCache         # the tied decoder
    positions: np.ndarray        # (N,) flat indices into B*T
    h_shape: tuple               # (B, T, H)


def mlm_head_forward(h, positions, params, config, trace=NO_TRACE):
    # h: (B, T, H), positions: (N,) flat indices into B*T; trace: scope "cls.predictions"
    B, T, H = h.shape
    hs = h.reshape(B * T, H)[positions]                                          # (N, H)
    a, dense_cache = backend.linear_gelu_forward(hs, params[DENSE + ".weight"], params[DENSE + ".bias"],
                                                 config.hidden_act)                 # (N, H)
    t, ln_cache = backend.layernorm_forward(a, params[LN + ".weight"], params[LN + ".bias"], config.layer_norm_eps)
    logits, dec_cache = backend.linear_forward(t, params[WORD], params[BIAS])    # (N, V) tied decoder
    trace.record(("transform.dense", "transform.transform_act_fn", "transform", "logits"),
                 (dense_cache.pre, a, t, logits))
    return logits, MlmHeadCache(dense_cache, ln_cache, dec_cache, positions, h.shape)


def mlm_head_backward(dlogits, cache: MlmHeadCache, trace=NO_TRACE):
    # dlogits: (N, V) -> dh: (B, T, H), grads by HF name (WORD holds the decoder's share only)
    g = {}
    trace.record_grad("logits", dlogits)
    dt, g[WORD], g[BIAS] = backend.linear_backward(dlogits, cache.decoder)       # (N, H)
    trace.record_grad("transform", dt)
    da, g[LN + ".weight"], g[LN + ".bias"] = backend.layernorm_backward(dt, cache.norm)
    trace.record_grad("transform.transform_act_fn", da)
    # made again, the reference's way, only when traced: the fused kernel never keeps it
    trace.record_grad("transform.dense", lambda: pre_activation_grad(da, cache.transform))
    dhs, g[DENSE + ".weight"], g[DENSE + ".bias"] = backend.linear_gelu_backward(da, cache.transform)  # (N, H)
    B, T, H = cache.h_shape
    dh = np.zeros((B * T, H), dtype=dlogits.dtype)
    np.add.at(dh, cache.positions, dhs)                                          # a position listed twice sums
    return dh.reshape(B, T, H), g
