"""Embedding lookup: out[i] = table[ids[i]].

Backward is a scatter-add: a row used several times collects the sum of its gradients
(docs/layers/embedding.md).
"""
from typing import NamedTuple

import numpy as np

from npbert.ops.cache_tag import NUMPY, check_tag


class EmbeddingCache(NamedTuple):
    ids: np.ndarray          # (...) integer, the rows looked up
    table_shape: tuple       # (V, H)
    dtype: np.dtype          # the table's
    backend: str = NUMPY


def embedding_forward(ids, table):
    # ids: (...) integer, table: (V, H)
    out = table[ids]                                   # (..., H)
    return out, EmbeddingCache(ids, table.shape, table.dtype)


def embedding_backward(dout, cache: EmbeddingCache):
    # dout: (..., H)
    check_tag(cache, NUMPY, "embedding_backward")
    dtable = np.zeros(cache.table_shape, dtype=cache.dtype)          # (V, H)
    np.add.at(dtable, cache.ids.reshape(-1), dout.reshape(-1, cache.table_shape[1]))  # repeated ids accumulate
    return dtable
