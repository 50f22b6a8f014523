"""Which positions of a (B, T) batch are the encoder's rows, and the two things that depend on it:
the attention core and dropout's index mapping.

BERT's layers are written once, over rows (N, H) (embeddings.py, attention.py,
encoder_layer.py, encoder.py, npbert/model.py); a layout says which positions are rows and picks
the attention core that suits them, as Hugging Face's attention interface picks eager, sdpa or
flash-attention's varlen kernel (cu_seqlens) under one model:

    Padded(attention_mask, dtype)        every B*T position is a row, padding included; attention
                                         per sequence of T rows with the additive mask bias
                                         (ops/attention_core.py). The reference: what the trace
                                         and the golden vectors record.
    Packed(attention_mask, read, cls)    only the N real tokens are rows, sequence after sequence
                                         (starts: cu_seqlens); attention per sequence on its own
                                         n x n scores, no mask (ops/packed_attention.py). Its
                                         read_rows are the rows the heads read: encoder.py runs
                                         the last layer there only, on the view reading(), whose
                                         query_rows say where those rows sit among the keys.

Dropout's uniforms are counter-based (ops/dropout.py): each element's is a function of the call's
key and the element's index in the padded (B*T, H) tensor, here (b*T + t)*H + h, so for one seed
both layouts drop the same elements, and each computes the uniforms of its own rows only.
"""
from __future__ import annotations

import numpy as np

from npbert import backend
from npbert.errors import InputError
from npbert.ops import (DropoutCache, attention_mask_bias, attention_scores, dropout_key, merge_heads, score_grads,
                        split_heads)
from npbert.ops.packed_attention import AttentionLayout, sequence_starts
from npbert.trace import NO_TRACE


def dropout_at(x, flat, p_drop, rng):
    # x: (R, H) rows at padded flat indices flat (R,) (None: 0, 1, ...) -> y: (R, H), cache
    if rng is None or p_drop == 0.0:
        return x, DropoutCache(None, x.dtype.type(1.0))
    return backend.dropout_rows_forward(x, p_drop, dropout_key(rng), flat)          # (R, H)


class Padded:
    """Every position of the (B, T) batch is a row, row b*T + t; attention with the mask bias."""
    read_rows = None                                   # the reference computes every row of every layer

    def __init__(self, attention_mask, dtype):
        mask = np.asarray(attention_mask)
        self.shape = B, T = mask.shape
        self.mask_bias = attention_mask_bias(mask, dtype)                  # (B, T) 0 or finfo.min
        self.positions = np.tile(np.arange(T), B)                          # (N,) N = B*T: position ids

    def rows_of(self, a):
        # a: (B, T, ...) -> (N, ...)
        return a.reshape(-1, *a.shape[2:])

    def batched(self, x):
        # x: (N, ...) -> (B, T, ...)
        return x.reshape(*self.shape, *x.shape[1:])

    def index(self, flat_positions):                   # flat indices into B*T -> rows of h: the same
        return np.asarray(flat_positions)

    def cls_index(self):                               # (B,) each [CLS]'s row of h, which the pooler reads
        return np.arange(self.shape[0]) * self.shape[1]

    def output_rows(self) -> int:                      # R, the rows of the encoder's output h: every one
        return len(self.positions)

    def dropout(self, x, p_drop, rng):
        # x: (N, H) -> y: (N, H), cache; row r is padded row r
        return dropout_at(x, None, p_drop, rng)

    def attention_forward(self, q, k, v, num_heads, p_drop, rng, trace=NO_TRACE):
        # q, k, v: (N, H) -> context (N, H), cache; trace: scope "bert.encoder.layer.{i}.attention"
        qh, kh, vh = (split_heads(self.batched(x), num_heads) for x in (q, k, v))  # (B, A, T, D) each
        context, core = backend.attention_core_forward(qh, kh, vh, self.mask_bias, p_drop, rng)  # (B, A, T, D)
        trace.record("self.scores", lambda: attention_scores(qh, kh, self.mask_bias)[0])  # the kernel keeps none
        trace.record("self.probs", core.probs)                                           # (B, A, T, T)
        return self.rows_of(merge_heads(context)), core                                  # (N, H)

    def attention_backward(self, dcontext, core, trace=NO_TRACE):
        # dcontext: (N, H) -> dq, dk, dv: (N, H) each
        dcontext = split_heads(self.batched(dcontext), core.q.shape[1])                  # (B, A, T, D)
        # made again, the reference's way, only when traced: the kernel keeps them in scratch memory
        trace.record_grad(("self.probs", "self.scores"), lambda: score_grads(dcontext, core))
        return tuple(self.rows_of(merge_heads(d)) for d in backend.attention_core_backward(dcontext, core))  # (N, H)


class PackedRows:
    """Query rows packed sequence after sequence, keys every real token: attention per sequence
    (ops/packed_attention.py), dropout at each query row's padded index, the queries' gradient added
    at their key rows. Packed is one (every row a query); Packed.reading(), the last layer's, has
    the read rows as queries."""

    def __init__(self, flat, attention: AttentionLayout, query_rows):
        self.flat = flat                               # (R,) each query row's padded index b*T + t
        self.attention = attention                     # each sequence's query and key rows and positions
        self.query_rows = query_rows                   # (R,) sorted, unique: each query row's key row

    def add_at_queries(self, dkeys, dqueries):
        # dkeys: (N, H) at the key rows, dqueries: (R, H) at the query rows -> dkeys, dqueries added there
        dkeys[self.query_rows] += dqueries             # in place; each row once: one add a row
        return dkeys

    def dropout(self, x, p_drop, rng):
        # x: (R, H) at the query rows -> y: (R, H), cache; drops what the padded layout drops there
        return dropout_at(x, self.flat, p_drop, rng)

    def attention_forward(self, q, k, v, num_heads, p_drop, rng, trace=NO_TRACE):
        # q: (R, H), k, v: (N, H) -> context (R, H), cache; dropout as the padded core's (B, A, T, T)
        key = dropout_key(rng) if rng is not None and p_drop != 0.0 else None
        return backend.packed_attention_forward(q, k, v, self.attention, num_heads, p_drop, key)

    def attention_backward(self, dcontext, core, trace=NO_TRACE):
        # dcontext: (R, H) -> dq (R, H), dk (N, H), dv (N, H)
        return backend.packed_attention_backward(dcontext, core)


class Packed(PackedRows):
    """The real tokens (attention mask 1) are the rows, in order; the last layer computes the rows
    `read` (flat indices into B*T; None: every real token) and, with cls, each [CLS]."""

    def __init__(self, attention_mask, read=None, cls=False):
        mask = np.asarray(attention_mask) != 0                             # (B, T)
        self.shape = mask.shape
        flat = np.flatnonzero(mask)                                        # (N,) flat (b, t) of each row
        self.lengths = mask.sum(axis=1)                                    # (B,) rows of each sequence
        self.starts = sequence_starts(self.lengths)                        # (B,) its first row: cu_seqlens
        self.positions = np.nonzero(mask)[1]                               # (N,) position ids of the rows
        self.sequence = np.repeat(np.arange(mask.shape[0]), self.lengths)  # (N,) whose row each is
        self.cls_real = mask[:, 0].copy()                                  # (B,) is [CLS] a real token
        super().__init__(flat, AttentionLayout(self.lengths, self.lengths, self.positions, self.positions,
                                               mask.shape[1]), np.arange(len(flat)))
        self.read_rows = None                                              # (R,) sorted; None: every row
        if read is not None:
            wanted = [self.row_of(np.asarray(read, dtype=np.int64).reshape(-1))] + ([self.cls_rows()] if cls else [])
            self.read_rows = np.unique(np.concatenate(wanted))                         # (R,)

    def rows_of(self, a):
        # a: (B, T, ...) -> (N, ...)
        return a.reshape(-1, *a.shape[2:])[self.flat]

    def batched(self, x):
        # x: (N, ...) -> (B, T, ...), zeros where the mask is 0
        out = np.zeros((self.shape[0] * self.shape[1], *x.shape[1:]), x.dtype)   # (B*T, ...)
        out[self.flat] = x
        return out.reshape(*self.shape, *x.shape[1:])

    def reading(self) -> PackedRows:
        """The last layer's view: queries (and their dropout) at read_rows, keys at every row."""
        return PackedRows(self.flat[self.read_rows], self.attention_layout(self.read_rows), self.read_rows)

    def index(self, flat_positions):
        """Flat indices into B*T -> rows of the encoder's output h (each one a row it computed)."""
        return self._in_output(self.row_of(np.asarray(flat_positions)))

    def cls_index(self):
        """(B,) the rows of h holding each sequence's position 0, [CLS], which the pooler reads."""
        return self._in_output(self.cls_rows())

    def output_rows(self) -> int:
        """R, the rows of the encoder's output h."""
        return len(self.flat) if self.read_rows is None else len(self.read_rows)

    def _in_output(self, rows):
        return rows if self.read_rows is None else np.searchsorted(self.read_rows, rows)

    def row_of(self, flat_positions):
        """Flat indices into B*T -> rows; each must be a real token."""
        where = np.full(self.shape[0] * self.shape[1], -1)                 # (B*T,) each position's row, or -1
        where[self.flat] = np.arange(len(self.flat))
        rows = where[flat_positions]                                        # (M,)
        if (rows < 0).any():
            bad = int(flat_positions[np.argmax(rows < 0)])
            raise InputError(f"mlm_positions has {bad} (sequence {bad // self.shape[1]}, position "
                             f"{bad % self.shape[1]}), a padded position: the MLM head predicts real tokens only")
        return rows

    def cls_rows(self):
        if not self.cls_real.all():
            b = int(np.argmin(self.cls_real))
            raise InputError(f"attention_mask[{b}, 0] is 0: the pooler reads position 0 ([CLS]), which must be a "
                             "real token here (a left-padded batch needs the padded bert_forward)")
        return self.starts                                                  # (B,)

    def attention_layout(self, rows) -> AttentionLayout:
        """Queries at the given sorted rows, keys at every row (every row a query: self.attention)."""
        q_lengths = np.bincount(self.sequence[rows], minlength=self.shape[0])   # (B,)
        return AttentionLayout(q_lengths, self.lengths, self.positions[rows], self.positions, self.shape[1])
