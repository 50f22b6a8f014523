"""Where the real tokens of a padded (B, T) batch sit in the packed (N, ...) arrays, N the
number of real tokens (attention_mask 1), sequence after sequence, and which packed rows a
layer computes queries for (its AttentionLayout)."""
from __future__ import annotations

import numpy as np

from npbert.errors import InputError
from npbert.ops.packed_attention import AttentionLayout, sequence_starts


class Packing:
    """The real tokens of a (B, T) attention mask, packed in order."""

    def __init__(self, attention_mask):
        mask = np.asarray(attention_mask) != 0                     # (B, T)
        self.shape = mask.shape
        self.flat = np.flatnonzero(mask)                           # (N,) flat (b, t) of each real token
        self.lengths = mask.sum(axis=1)                            # (B,)
        self.starts = sequence_starts(self.lengths)                # (B,) first packed row of b
        self.positions = np.nonzero(mask)[1]                       # (N,) position ids of the real tokens
        self.sequence = np.repeat(np.arange(mask.shape[0]), self.lengths)   # (N,) whose row each is
        self.cls_real = mask[:, 0].copy()                          # (B,) is position 0 ([CLS]) a real token

    def pack(self, a):
        # a: (B, T, ...) -> (N, ...)
        return a.reshape(-1, *a.shape[2:])[self.flat]

    def unpack(self, x):
        # x: (N, ...) -> (B, T, ...), zeros where the mask is 0
        out = np.zeros((self.shape[0] * self.shape[1], *x.shape[1:]), x.dtype)
        out[self.flat] = x
        return out.reshape(*self.shape, *x.shape[1:])

    def packed_index(self, flat_positions, what="mlm_positions", why="the MLM head predicts real tokens only"):
        """Flat indices into B*T -> rows of the packed arrays; each must be a real token."""
        where = np.full(self.shape[0] * self.shape[1], -1)
        where[self.flat] = np.arange(len(self.flat))
        rows = where[flat_positions]
        if (rows < 0).any():
            bad = int(flat_positions[np.argmax(rows < 0)])
            raise InputError(f"{what} has {bad} (sequence {bad // self.shape[1]}, position "
                             f"{bad % self.shape[1]}), a padded position: {why}")
        return rows

    def cls_rows(self):
        """(B,) the packed row of each sequence's position 0, [CLS], which the pooler reads."""
        if not self.cls_real.all():
            b = int(np.argmin(self.cls_real))
            raise InputError(f"attention_mask[{b}, 0] is 0: the pooler reads position 0 ([CLS]), which must be a "
                             "real token here (a left-padded batch needs the padded bert_forward)")
        return self.starts

    def layout(self, rows=None) -> AttentionLayout:
        """Queries at every real token (rows None) or at the given sorted packed rows; keys at
        every real token."""
        if rows is None:
            return AttentionLayout(self.lengths, self.lengths, self.positions, self.positions)
        q_lengths = np.bincount(self.sequence[rows], minlength=self.shape[0])   # (B,)
        return AttentionLayout(q_lengths, self.lengths, self.positions[rows], self.positions)

    def flat_of(self, rows=None):
        """(R,) the padded batch's flat (b, t) of packed rows (all when None)."""
        return self.flat if rows is None else self.flat[rows]
