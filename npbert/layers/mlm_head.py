"""The masked-LM head, computed only at the masked positions, as the original BERT does
(docs/layers/mlm_head.md):

    t      = LayerNorm(gelu(W_t h[positions] + b_t))          (M, H)   the transform
    logits = t E^T + bias                                     (M, V)   the tied decoder

h is the encoder's output rows (N, H), positions (M,) row indices into it.

Two ways to run it:
- mlm_head_forward / mlm_head_backward: the logits, whole (the reference; the trace records them);
- mlm_loss_forward / mlm_loss_backward: the decoder and its cross-entropy fused (hot op
  decoder_cross_entropy, ops/decoder_cross_entropy.py): the loss and each row's prediction,
  the (M, V) logits made a block of rows at a time and never kept: what the training step and
  the inference functions run.

The decoder is tied to the word embeddings E ("bert.embeddings.word_embeddings.weight"),
so its gradient is returned under that name and the model adds it to the embedding's.
"""
from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.ops import DecoderCrossEntropyCache, LayerNormCache, LinearCache, LinearGeluCache, pre_activation_grad
from npbert.trace import NO_TRACE

DENSE, LN, BIAS = "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias"
WORD = "bert.embeddings.word_embeddings.weight"


class MlmHeadCache(NamedTuple):
    transform: LinearGeluCache   # cls.predictions.transform.dense + GELU
    norm: LayerNormCache         # cls.predictions.transform.LayerNorm
    decoder: LinearCache         # the tied decoder
    positions: np.ndarray        # (M,) rows of h
    h_shape: tuple               # (N, H)


class MlmLossCache(NamedTuple):
    transform: LinearGeluCache   # as MlmHeadCache's
    norm: LayerNormCache
    loss: DecoderCrossEntropyCache   # the fused decoder and cross-entropy: their gradients, made in forward
    positions: np.ndarray
    h_shape: tuple


def mlm_transform_forward(h, positions, params, config, trace=NO_TRACE):
    # h: (N, H), positions: (M,) rows of h -> t: (M, H), dense and LayerNorm caches
    hs = h[positions]                                                            # (M, H)
    a, dense_cache = backend.linear_gelu_forward(hs, params[DENSE + ".weight"], params[DENSE + ".bias"],
                                                 config.hidden_act)                 # (M, H)
    t, ln_cache = backend.layernorm_forward(a, params[LN + ".weight"], params[LN + ".bias"], config.layer_norm_eps)
    trace.record(("transform.dense", "transform.transform_act_fn", "transform"), (dense_cache.pre, a, t))
    return t, dense_cache, ln_cache


def mlm_transform_backward(dt, cache, trace=NO_TRACE):
    # dt: (M, H), cache: an MlmHeadCache or MlmLossCache -> dh: (N, H), the transform's grads by HF name
    g = {}
    trace.record_grad("transform", dt)
    da, g[LN + ".weight"], g[LN + ".bias"] = backend.layernorm_backward(dt, cache.norm)
    trace.record_grad("transform.transform_act_fn", da)
    # made again, the reference's way, only when traced: the fused kernel never keeps it
    trace.record_grad("transform.dense", lambda: pre_activation_grad(da, cache.transform))
    dhs, g[DENSE + ".weight"], g[DENSE + ".bias"] = backend.linear_gelu_backward(da, cache.transform)  # (M, H)
    dh = np.zeros(cache.h_shape, dtype=dt.dtype)                                 # (N, H)
    np.add.at(dh, cache.positions, dhs)                                          # a position listed twice sums
    return dh, g


def mlm_head_forward(h, positions, params, config, trace=NO_TRACE):
    # h: (N, H), positions: (M,) rows of h -> logits: (M, V), cache; trace: scope "cls.predictions"
    t, dense_cache, ln_cache = mlm_transform_forward(h, positions, params, config, trace)   # (M, H)
    logits, dec_cache = backend.linear_forward(t, params[WORD], params[BIAS])    # (M, V) tied decoder
    trace.record("logits", logits)
    return logits, MlmHeadCache(dense_cache, ln_cache, dec_cache, positions, h.shape)


def mlm_head_backward(dlogits, cache: MlmHeadCache, trace=NO_TRACE):
    # dlogits: (M, V) -> dh: (N, H), grads by HF name (WORD holds the decoder's share only)
    trace.record_grad("logits", dlogits)
    dt, dword, dbias = backend.linear_backward(dlogits, cache.decoder)           # (M, H)
    dh, g = mlm_transform_backward(dt, cache, trace)
    return dh, {WORD: dword, BIAS: dbias, **g}


def mlm_loss_forward(h, positions, params, config, labels, grad=True, trace=NO_TRACE):
    # h: (N, H), positions, labels: (M,) -> (loss, predictions (M,)), cache; grad=False: forward only
    t, dense_cache, ln_cache = mlm_transform_forward(h, positions, params, config, trace)   # (M, H)
    loss, dce = backend.decoder_cross_entropy_forward(t, params[WORD], params[BIAS], labels, grad=grad)
    return (loss, dce.predictions), MlmLossCache(dense_cache, ln_cache, dce, positions, h.shape)


def mlm_loss_backward(dloss, cache: MlmLossCache, trace=NO_TRACE):
    # dloss: scalar -> dh: (N, H), grads by HF name (WORD holds the decoder's share only)
    dt, dword, dbias = backend.decoder_cross_entropy_backward(dloss, cache.loss)    # (M, H), (V, H), (V,)
    dh, g = mlm_transform_backward(dt, cache, trace)
    return dh, {WORD: dword, BIAS: dbias, **g}
