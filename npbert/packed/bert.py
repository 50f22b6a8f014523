"""BertModel on the packed real tokens (npbert/model.py's bert_forward/bert_backward):

    (h, pooled), cache = packed_bert_forward(params, config, input_ids, token_type_ids,
                                             attention_mask, rng=None, read=None)
    grads = packed_bert_backward(dh, dpooled, cache)

read: flat indices into the B*T tokens the caller's head reads (None: every real token); the
last layer computes only those rows and [CLS] (for the pooler). h is (R, H), row
cache.index(positions) holding those flat positions; pooled is (B, H), from each sequence's
position 0, which must be a real token.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.layers.pooler import PoolerCache, pooler_backward, pooler_forward
from npbert.model import POOLER_WEIGHT, check_inputs
from npbert.packed.embeddings import PackedEmbeddingsCache, packed_embeddings_backward, packed_embeddings_forward
from npbert.packed.encoder import packed_encoder_backward, packed_encoder_forward
from npbert.packed.packing import Packing
from npbert.trace import NO_TRACE


class PackedBertCache(NamedTuple):
    packing: Packing
    rows: np.ndarray | None              # (R,) the packed rows h holds, sorted; None: every real token
    embeddings: PackedEmbeddingsCache | None   # None: forward only (keep_caches=False)
    layers: list
    pooler: PoolerCache | None

    @property
    def trace(self):
        return NO_TRACE                  # the packed path records nothing (the padded reference does)

    def index(self, flat_positions, what="mlm_positions", why="the MLM head predicts real tokens only"):
        """Flat indices into B*T -> rows of h (each must be a real token the forward read)."""
        packed = self.packing.packed_index(np.asarray(flat_positions), what, why)     # (M,)
        return packed if self.rows is None else np.searchsorted(self.rows, packed)


def read_rows(packing: Packing, read, pooler: bool):
    """The sorted packed rows the last layer computes: `read`'s and, for the pooler, [CLS]'s."""
    if read is None:
        return None
    wanted = [packing.packed_index(np.asarray(read, dtype=np.int64).reshape(-1))]
    if pooler:
        wanted.append(packing.cls_rows())
    return np.unique(np.concatenate(wanted))                                           # (R,)


def cls_index(cache: PackedBertCache):
    """(B,) the rows of h holding each sequence's position 0, [CLS]."""
    rows = cache.packing.cls_rows()                                                     # (B,) packed rows
    return rows if cache.rows is None else np.searchsorted(cache.rows, rows)


def packed_bert_forward(params, config, input_ids, token_type_ids=None, attention_mask=None, rng=None,
                        read=None, keep_caches=True):
    """-> (h (R, H), pooled (B, H) or None without a pooler), cache. rng None: no dropout."""
    inputs = check_inputs(config, input_ids, token_type_ids, attention_mask)
    return packed_bert_forward_checked(params, config, *inputs, rng, read, keep_caches)


def packed_bert_forward_checked(params, config, input_ids, token_type_ids, attention_mask, rng, read, keep_caches):
    """packed_bert_forward on inputs check_inputs has already validated (a caller that needed
    their shape first: the pretraining model, fill-mask), so they are not checked twice a step."""
    packing = Packing(attention_mask)
    pooler = POOLER_WEIGHT in params
    rows = read_rows(packing, read, pooler)                                              # (R,) or None
    x, emb = packed_embeddings_forward(input_ids, token_type_ids, packing, params, config, rng)  # (N, H)
    h, layers = packed_encoder_forward(x, packing, params, config, rng, rows, keep_caches)      # (R, H)
    cache = PackedBertCache(packing, rows, emb if keep_caches else None, layers, None)
    if not pooler:
        return (h, None), cache
    cls = h[cls_index(cache)]                                                           # (B, H)
    pooled, pool_cache = pooler_forward(cls[:, None], params)                            # (B, H)
    return (h, pooled), cache._replace(pooler=pool_cache)


def packed_bert_backward(dh, dpooled, cache: PackedBertCache):
    """dh: (R, H) or None, dpooled: (B, H) or None -> grads for every bert.* parameter."""
    grads = {}
    if cache.pooler is not None:      # a head that ignores the pooler still gets its (zero) gradient
        dpooled = np.zeros_like(cache.pooler.pooled) if dpooled is None else dpooled
        dcls, grads = pooler_backward(dpooled, cache.pooler)                             # (B, 1, H)
        R = len(cache.packing.flat) if cache.rows is None else len(cache.rows)
        dh_pool = np.zeros((R, dcls.shape[-1]), dcls.dtype)                              # (R, H)
        dh_pool[cls_index(cache)] = dcls[:, 0]                                           # only [CLS] gets gradient
        dh = dh_pool if dh is None else dh + dh_pool
    dx, g_enc = packed_encoder_backward(dh, cache.layers)                                # (N, H)
    grads.update(g_enc)
    grads.update(packed_embeddings_backward(dx, cache.embeddings))
    return grads
