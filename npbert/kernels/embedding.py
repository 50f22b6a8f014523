"""Embedding lookup and its gradient scatter-add for the numba backend.

The lookup stays NumPy's fancy indexing (one gather, already optimal). The backward replaces
np.add.at, which is slow (a Python-level ufunc loop per index), with a compiled loop that
adds rows in the same order, so repeated ids accumulate exactly as in the reference. It is
sequential on purpose: rows with the same id would race in a parallel loop, and the work
(N x H adds) is small next to zeroing the (V, H) table.
"""
import numpy as np
from numba import njit

from npbert.ops.embedding import EmbeddingCache, without_padding_row


@njit(cache=True, error_model="numpy")
def _scatter_add(ids, dout, dtable):
    # ids: (N,), dout: (N, H), dtable: (V, H)
    for i in range(ids.size):
        r = ids[i]
        for j in range(dout.shape[1]):
            dtable[r, j] += dout[i, j]


def embedding_forward(ids, table, padding_idx=None):
    # ids: (...) integer, table: (V, H)
    return table[ids], EmbeddingCache(ids, table.shape, table.dtype, padding_idx)  # (..., H): NumPy's gather


def embedding_backward(dout, cache: EmbeddingCache):
    # dout: (..., H)
    ids, shape, dtype = cache.ids, cache.table_shape, cache.dtype
    dtable = np.zeros(shape, dtype=dtype)              # (V, H)
    _scatter_add(ids.reshape(-1).astype(np.int64), np.ascontiguousarray(dout).reshape(-1, shape[1]), dtable)
    return without_padding_row(dtable, cache)
