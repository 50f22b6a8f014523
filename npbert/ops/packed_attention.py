"""Self-attention over sequences packed back to back (the packed layout's core,
npbert/layers/layout.py): no padding, so no mask.

    q: (M, H) query rows, k, v: (N, H) key/value rows, of S sequences one after another
    sequence s: its q_lengths[s] = m query rows and k_lengths[s] = n key rows (its real tokens)
    per sequence s and head a (D = H / A columns each):
        probs   = softmax(q_s k_s^T / sqrt(D))                  (m, n)
        context = dropout(probs) v_s                            (m, D)

The queries may be fewer than the keys: the last encoder layer of a step computes its
queries only at the rows the heads read (npbert/layers/encoder.py), each sequence's keys
are all its real tokens. With every row a query, this is bert_forward's attention at the
real positions of a padded batch, without the padded queries and keys.

Dropout drops what the padded step drops for the same key: the weight of query i and key j of
sequence s, head a, has the counter-based uniform (npbert/ops/dropout.py) of its index in the
padded core's (S, A, T, T) probabilities, ((s A + a) T + q_positions[i]) T + k_positions[j],
T being the padded batch's length (layout.seq_len).

The probabilities are kept for the backward in one flat array, unit (s, a) after unit, each
unit's (m, n) block row-major (unit_offsets); the keep mask the same way.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from npbert.ops.dropout import drop_mask, dropout_uniforms
from npbert.ops.softmax import SoftmaxCache, softmax_backward, softmax_forward


class AttentionLayout(NamedTuple):
    """Whose rows are whose in the packed arrays, sequence after sequence."""
    q_lengths: np.ndarray     # (S,) int64 query rows of each sequence
    k_lengths: np.ndarray     # (S,) int64 key/value rows of each sequence (its real tokens)
    q_positions: np.ndarray   # (M,) int64 each query row's position in its padded sequence
    k_positions: np.ndarray   # (N,) int64 each key row's
    seq_len: int = 0          # T of the padded batch: where dropout reads its uniforms (needed with dropout)


class PackedAttentionCache(NamedTuple):
    q: np.ndarray             # (M, H)
    k: np.ndarray             # (N, H)
    v: np.ndarray             # (N, H)
    layout: AttentionLayout
    num_heads: int
    probs: np.ndarray         # (P,) every unit's (m, n) softmax, before dropout; P = A * sum(m n)
    keep: np.ndarray | None   # (P,) bool, the weights dropout kept; None without dropout
    drop_scale: object        # 1 / (1 - p), of q's dtype


def sequence_starts(lengths):
    """(S,) int64: the first packed row of each sequence."""
    lengths = np.asarray(lengths, dtype=np.int64)                                # (S,)
    return np.cumsum(lengths) - lengths                                          # (S,) rows before each


def unit_offsets(layout: AttentionLayout, num_heads):
    """(S * A + 1,) int64: where unit (s, a)'s (m, n) block starts in the flat probabilities."""
    sizes = np.repeat(layout.q_lengths * layout.k_lengths, num_heads)            # (S * A,)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def _blocks(layout: AttentionLayout):
    """(s, query rows, key rows) of each sequence."""
    q0, k0 = sequence_starts(layout.q_lengths), sequence_starts(layout.k_lengths)
    for s, (m, n) in enumerate(zip(layout.q_lengths, layout.k_lengths)):
        yield s, slice(q0[s], q0[s] + m), slice(k0[s], k0[s] + n)


def _heads(x, num_heads):
    # x: (n, H) -> (A, n, D); D spelled out, not -1: n may be 0 (a sequence without query rows)
    return x.reshape(len(x), num_heads, x.shape[1] // num_heads).transpose(1, 0, 2)


def _merged(x):
    # x: (A, n, D) -> (n, A * D)
    A, n, D = x.shape
    return x.transpose(1, 0, 2).reshape(n, A * D)


def _keep_block(key, s, num_heads, layout, qs, ks, p_drop):
    # -> (A, m, n) bool: the uniforms of sequence s at its query and key positions in (S, A, T, T)
    T = layout.seq_len
    unit = (s * num_heads + np.arange(num_heads, dtype=np.uint64))[:, None, None]            # (A, 1, 1)
    index = (unit * T + layout.q_positions[qs].astype(np.uint64)[:, None]) * T + layout.k_positions[ks].astype(
        np.uint64)                                                                              # (A, m, n)
    return dropout_uniforms(key, index) >= p_drop


def packed_attention_forward(q, k, v, layout: AttentionLayout, num_heads, p_drop=0.0, key=None):
    # q: (M, H), k, v: (N, H), key: the dropout call's key or None -> context (M, H), cache
    dropping = key is not None and p_drop != 0.0
    if dropping and layout.seq_len <= max(np.max(layout.q_positions, initial=0), np.max(layout.k_positions, initial=0)):
        raise ValueError(f"packed attention: dropout needs the layout's seq_len (the padded T), above every "
                         f"position; it is {layout.seq_len}")
    drop_scale = q.dtype.type(1.0 / (1.0 - p_drop) if dropping else 1.0)
    scale = 1.0 / math.sqrt(q.shape[1] // num_heads)
    offsets = unit_offsets(layout, num_heads)
    probs = np.empty(offsets[-1], q.dtype)                                       # (P,)
    keep = np.empty(offsets[-1], np.bool_) if dropping else None                 # (P,)
    context = np.empty_like(q)                                                   # (M, H)
    for s, qs, ks in _blocks(layout):
        if qs.start == qs.stop:
            continue                                   # no query rows (or no tokens): nothing to attend
        block = slice(offsets[s * num_heads], offsets[(s + 1) * num_heads])
        qh, kh, vh = _heads(q[qs], num_heads), _heads(k[ks], num_heads), _heads(v[ks], num_heads)  # (A, m|n, D)
        p, _ = softmax_forward((qh @ kh.transpose(0, 2, 1)) * scale)             # (A, m, n)
        probs[block] = p.reshape(-1)
        if dropping:
            kept = _keep_block(key, s, num_heads, layout, qs, ks, p_drop)        # (A, m, n)
            keep[block] = kept.reshape(-1)
            p = p * drop_mask(kept, drop_scale)
        context[qs] = _merged(p @ vh)                                           # (m, H)
    return context, PackedAttentionCache(q, k, v, layout, num_heads, probs, keep, drop_scale)


def packed_attention_backward(dcontext, cache: PackedAttentionCache):
    # dcontext: (M, H) -> dq (M, H), dk (N, H), dv (N, H)
    q, k, v, A = cache.q, cache.k, cache.v, cache.num_heads
    scale = 1.0 / math.sqrt(q.shape[1] // A)
    offsets = unit_offsets(cache.layout, A)
    dq, dk, dv = np.empty_like(q), np.empty_like(k), np.empty_like(v)
    for s, qs, ks in _blocks(cache.layout):
        m, n = qs.stop - qs.start, ks.stop - ks.start
        block = slice(offsets[s * A], offsets[(s + 1) * A])
        p = cache.probs[block].reshape(A, m, n)                                  # (A, m, n)
        mask = 1 if cache.keep is None else drop_mask(cache.keep[block].reshape(A, m, n), cache.drop_scale)
        dc, qh, kh, vh = (_heads(x, A) for x in (dcontext[qs], q[qs], k[ks], v[ks]))  # (A, m|n, D)
        dv[ks] = _merged((p * mask).transpose(0, 2, 1) @ dc)                    # (n, H)
        dprobs = (dc @ vh.transpose(0, 2, 1)) * mask                             # (A, m, n)
        dqk = softmax_backward(dprobs, SoftmaxCache(p)) * scale                  # (A, m, n) of q k^T
        dq[qs] = _merged(dqk @ kh)                                              # (m, H)
        dk[ks] = _merged(dqk.transpose(0, 2, 1) @ qh)                          # (n, H)
    return dq, dk, dv
