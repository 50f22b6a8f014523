"""Self-attention over sequences packed back to back, for inference (npbert/inference.py):
no padding, so no mask; no dropout; no cache (nothing here has a backward).

    q, k, v: (N, H), the rows of S sequences one after another (lengths (S,), summing to N)
    for each sequence s (its n_s rows) and head: context = softmax(q k^T / sqrt(D)) v   (n_s, D)

Each sequence attends within itself, over its own n_s keys: bert_forward's attention at the
real positions of a padded batch, without the padded queries and keys. This reference calls
attention_core_forward once per run of consecutive sequences of equal length (a batch without
padding is a single run: bert_forward's own call); npbert/kernels/packed_attention.py does
every (sequence, head) in one parallel loop.
"""
import numpy as np

from npbert.ops.attention_core import attention_core_forward, merge_heads, split_heads


def sequence_starts(lengths):
    """(S,) int64: the first packed row of each sequence."""
    lengths = np.asarray(lengths, dtype=np.int64)                                # (S,)
    return np.cumsum(lengths) - lengths                                          # (S,) rows before each


def equal_length_runs(lengths):
    """[(first row, sequences, length)] of the runs of consecutive sequences of equal length."""
    lengths = np.asarray(lengths, dtype=np.int64)                                # (S,)
    if not len(lengths):
        return []
    starts = sequence_starts(lengths)                                            # (S,) first row of each
    firsts = np.concatenate([[0], np.flatnonzero(np.diff(lengths)) + 1]).astype(np.int64)  # first sequence of each run
    counts = np.diff(np.concatenate([firsts, [len(lengths)]]))
    return [(int(starts[f]), int(c), int(lengths[f])) for f, c in zip(firsts, counts)]


def packed_attention(q, k, v, lengths, num_heads):
    # q, k, v: (N, H) packed, lengths: (S,) -> context (N, H)
    N, H = q.shape
    context = np.empty_like(q)                                                   # (N, H)
    for start, count, n in equal_length_runs(lengths):                          # count sequences of n tokens
        if n == 0:
            continue
        rows = slice(start, start + count * n)
        qh, kh, vh = (split_heads(a[rows].reshape(count, n, H), num_heads) for a in (q, k, v))  # (count, A, n, D)
        c, _ = attention_core_forward(qh, kh, vh, np.zeros((count, n), q.dtype), 0.0, None)   # (count, A, n, D)
        context[rows] = merge_heads(c).reshape(count * n, H)                    # (count * n, H)
    return context
