"""Embedding lookup: out[i] = table[ids[i]].

Backward is a scatter-add: a row used several times collects the sum of its gradients
(docs/layers/embedding.md).
"""
import numpy as np


def embedding_forward(ids, table):
    # ids: (...) integer, table: (V, H)
    out = table[ids]                                   # (..., H)
    return out, (ids, table.shape, table.dtype)


def embedding_backward(dout, cache):
    # dout: (..., H)
    ids, shape, dtype = cache
    dtable = np.zeros(shape, dtype=dtype)              # (V, H)
    np.add.at(dtable, ids.reshape(-1), dout.reshape(-1, shape[1]))  # repeated ids accumulate
    return dtable
