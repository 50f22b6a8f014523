"""The MLM decoder (logits = t W^T + b, W the tied word embeddings) and what is read from its
logits, BLOCK_ROWS rows at a time, so the (M, V) logits are never in memory whole
(docs/layers/cross_entropy.md, "The decoder and its loss fused"):

    decoder_cross_entropy_forward   cross-entropy (ops/cross_entropy.py) of t W^T + b and, for
                                    training, its gradients with respect to t, W and b
    decoder_log_softmax_at          log p(target) at each row, accumulated in float64 (scoring)
    decoder_top_k                   each row's k likeliest ids and their log p (fill-mask)

A row's gradient, softmax - onehot, needs every logit of the row and its logsumexp, so each
block's gradient is made while the block's logits are in memory, at dloss = 1, and the cache
keeps dt, dW, db: the gradient is linear in dloss, which backward multiplies in. The same loss
and gradients as linear_forward then cross_entropy_forward and their backwards (this file
calls them on each block), up to the order of the sums over blocks.
"""
from typing import NamedTuple

import numpy as np

from npbert.ops.cross_entropy import IGNORE_INDEX, cross_entropy_backward, cross_entropy_forward, label_log_probs
from npbert.ops.linear import linear_backward, linear_forward

BLOCK_ROWS = 512                 # at most this many rows of logits at once: (512, 30,522) float32 is 62 MB


class DecoderCrossEntropyCache(NamedTuple):
    dt: np.ndarray | None        # (M, H) d loss / d t at dloss = 1; None: forward only
    dw: np.ndarray | None        # (V, H) the decoder's share of d loss / d W at dloss = 1
    db: np.ndarray | None        # (V,) d loss / d b at dloss = 1
    predictions: np.ndarray      # (M,) int64 each row's likeliest id (argmax of its logits, the first on ties)


def row_blocks(M):
    """Slices covering [0, M) in as few blocks of at most BLOCK_ROWS rows as can, of near-equal size
    (each block reads all of W again: a last block of a few rows would cost as much as a full one)."""
    blocks = max(-(-M // BLOCK_ROWS), 1)
    bounds = [M * k // blocks for k in range(blocks + 1)]
    return [slice(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]


def decoder_cross_entropy_forward(t, w, b, labels, ignore_index=IGNORE_INDEX, grad=True):
    # t: (M, H), w: (V, H), b: (V,), labels: (M,) integer -> loss, cache (grad=False: no gradient kept)
    M, V = len(t), len(w)
    counted = labels != ignore_index                                 # (M,)
    n = max(int(counted.sum()), 1)
    predictions, log_probs = np.empty(M, np.int64), np.empty(M, t.dtype)   # (M,) each
    dt, dw, db = (np.empty_like(t), np.zeros_like(w), np.zeros(V, t.dtype)) if grad else (None, None, None)
    for rows in row_blocks(M):
        logits, decoder = linear_forward(t[rows], w, b)                          # (m, V) one block
        _, ce = cross_entropy_forward(logits, labels[rows], ignore_index)
        predictions[rows] = logits.argmax(axis=1)
        log_probs[rows] = label_log_probs(ce)                                    # (m,)
        if grad:
            dlogits = cross_entropy_backward(1.0, ce._replace(n=n))              # (m, V): the mean over all n rows
            dt[rows], dw_block, db_block = linear_backward(dlogits, decoder)     # (m, H), (V, H), (V,)
            dw += dw_block
            db += db_block
    loss = -(log_probs * counted).sum() / n
    return t.dtype.type(loss), DecoderCrossEntropyCache(dt, dw, db, predictions)


def decoder_cross_entropy_backward(dloss, cache: DecoderCrossEntropyCache):
    # -> dt (M, H), dw (V, H), db (V,)
    if cache.dt is None:
        raise ValueError("decoder_cross_entropy_forward ran with grad=False: it kept no gradient")
    if dloss == 1.0:
        return cache.dt, cache.dw, cache.db
    scale = cache.dt.dtype.type(dloss)
    return cache.dt * scale, cache.dw * scale, cache.db * scale


def log_softmax_at(logits, targets):
    """logits: (M, V), targets: (M,) -> (M,) float64 log p(target) = logit - logsumexp, summed in float64."""
    top = logits.max(axis=1, keepdims=True)                                         # (M, 1)
    total = np.exp(logits - top).sum(axis=1, dtype=np.float64)                      # (M,)
    picked = logits[np.arange(len(targets)), targets].astype(np.float64)            # (M,)
    return picked - top[:, 0].astype(np.float64) - np.log(total)                    # (M,)


def decoder_log_softmax_at(t, w, b, targets):
    # t: (M, H), w: (V, H), b: (V,), targets: (M,) -> (M,) float64 log p(target | row)
    out = np.empty(len(t))
    for rows in row_blocks(len(t)):
        out[rows] = log_softmax_at(linear_forward(t[rows], w, b)[0], targets[rows])   # (m, V) one block
    return out


def decoder_top_k(t, w, b, k):
    # t: (M, H) -> ids (M, k) int64 and their log p (M, k) float64, likeliest first (on ties the smaller id)
    M, k = len(t), min(k, len(w))
    ids, log_p = np.empty((M, k), np.int64), np.empty((M, k))
    for rows in row_blocks(M):
        logits = linear_forward(t[rows], w, b)[0].astype(np.float64)                # (m, V) one block
        top = logits.max(axis=1, keepdims=True)                                     # (m, 1)
        lse = top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True))         # (m, 1)
        ids[rows] = np.argsort(-logits, axis=1, kind="stable")[:, :k]               # (m, k)
        log_p[rows] = np.take_along_axis(logits, ids[rows], axis=1) - lse
    return ids, log_p
