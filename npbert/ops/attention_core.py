"""The attention core: from the heads' queries, keys and values to their context vectors
(docs/layers/attention.md, which also has the projections around it: npbert/layers/attention.py).

    scores  = q k^T * scale + mask_bias        scale = 1 / sqrt(D)       (B, A, T, T)
    probs   = softmax(scores) over the keys                              (B, A, T, T)
    context = dropout(probs) v                                           (B, A, T, D)

This is the hot op a backend may replace (npbert/kernels/attention_core.py fuses everything
between the four matmuls).
"""
import math
from typing import NamedTuple

import numpy as np

from npbert.ops.dropout import drop_mask, dropout_forward
from npbert.ops.softmax import SoftmaxCache, softmax_backward, softmax_forward


class AttentionCoreCache(NamedTuple):
    q: np.ndarray            # (B, A, T, D)
    k: np.ndarray            # (B, A, T, D)
    v: np.ndarray            # (B, A, T, D)
    probs: np.ndarray        # (B, A, T, T) softmax of the scores, before dropout
    keep: np.ndarray | None  # (B, A, T, T) bool, the attention weights dropout kept; None without dropout
    drop_scale: object       # 1 / (1 - p), of q's dtype
    scale: float             # 1 / sqrt(D)


def split_heads(x, num_heads):
    B, T, H = x.shape
    return x.reshape(B, T, num_heads, H // num_heads).transpose(0, 2, 1, 3)  # (B, A, T, D)


def merge_heads(x):
    B, A, T, D = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, A * D)                     # (B, T, H)


def attention_mask_bias(attention_mask, dtype):
    """(B, T) 1 = real token, 0 = padding  ->  (B, T) additive bias: 0 or the dtype's minimum.

    Hugging Face adds finfo(dtype).min; exp of it underflows to exactly 0, so a padded key
    gets exactly zero probability (and zero gradient)."""
    keep = np.asarray(attention_mask) != 0
    return np.where(keep, 0.0, np.finfo(dtype).min).astype(dtype)


def attention_scores(q, k, mask_bias):
    # q, k: (B, A, T, D), mask_bias: (B, T) -> scores: (B, A, T, T), and the scale 1 / sqrt(D)
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = (q @ k.swapaxes(-1, -2)) * scale          # (B, A, T, T)
    scores += mask_bias[:, None, None, :]              # padded keys -> very negative
    return scores, scale


def attention_core_forward(q, k, v, mask_bias, p_drop, rng):
    # q, k, v: (B, A, T, D), mask_bias: (B, T)
    scores, scale = attention_scores(q, k, mask_bias)  # (B, A, T, T)
    probs, _ = softmax_forward(scores)                 # (B, A, T, T)
    probs_dropped, drop = dropout_forward(probs, p_drop, rng)
    context = probs_dropped @ v                        # (B, A, T, D)
    return context, AttentionCoreCache(q, k, v, probs, drop.keep, drop.scale, scale)


def score_grads(dcontext, cache: AttentionCoreCache):
    """(dprobs, dscores): the gradients of the probabilities (before dropout) and of the masked,
    scaled scores, from the context's. Part of the backward below; a trace calls it on either
    backend's cache to record them (the Numba kernel keeps them in a scratch buffer)."""
    dprobs = dcontext @ cache.v.swapaxes(-1, -2)      # (B, A, T, T) gradient of the dropped probs ...
    if cache.keep is not None:
        dprobs = dprobs * drop_mask(cache.keep, cache.drop_scale)   # ... and of the probs
    return dprobs, softmax_backward(dprobs, SoftmaxCache(cache.probs))   # (B, A, T, T) each


def attention_core_backward(dcontext, cache: AttentionCoreCache):
    # dcontext: (B, A, T, D)
    q, k, probs, keep = cache.q, cache.k, cache.probs, cache.keep
    probs_dropped = probs if keep is None else probs * drop_mask(keep, cache.drop_scale)  # cheaper to redo than keep
    dv = probs_dropped.swapaxes(-1, -2) @ dcontext     # (B, A, T, D)
    _, dscores = score_grads(dcontext, cache)          # (B, A, T, T)
    dqk = dscores * cache.scale                        # (B, A, T, T) of q k^T; the mask is a constant
    dq = dqk @ k                                       # (B, A, T, D)
    dk = dqk.swapaxes(-1, -2) @ q                      # (B, A, T, D)
    return dq, dk, dv
