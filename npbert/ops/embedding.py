"""Embedding lookup: out[i] = table[ids[i]].

Backward is a scatter-add: a row used several times collects the sum of its gradients
(docs/layers/embedding.md). With padding_idx (PyTorch's nn.Embedding argument, which Hugging
Face's word table sets to pad_token_id), that row gets no gradient from the lookup.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class EmbeddingCache(NamedTuple):
    ids: np.ndarray          # (...) integer, the rows looked up
    table_shape: tuple       # (V, H)
    dtype: np.dtype          # the table's
    padding_idx: int | None  # the row the lookup gives no gradient (None: every row gets one)


def embedding_forward(ids, table, padding_idx=None):
    # ids: (...) integer, table: (V, H)
    out = table[ids]                                   # (..., H)
    return out, EmbeddingCache(ids, table.shape, table.dtype, padding_idx)


def embedding_backward(dout, cache: EmbeddingCache):
    # dout: (..., H)
    dtable = np.zeros(cache.table_shape, dtype=cache.dtype)          # (V, H)
    np.add.at(dtable, cache.ids.reshape(-1), dout.reshape(-1, cache.table_shape[1]))  # repeated ids accumulate
    return without_padding_row(dtable, cache)


def without_padding_row(dtable, cache: EmbeddingCache):
    """The lookup's gradient with the padding row zeroed: that row is a constant to the lookup."""
    if cache.padding_idx is not None:
        dtable[cache.padding_idx] = 0
    return dtable
