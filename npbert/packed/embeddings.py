"""The embeddings block (npbert/layers/embeddings.py) on the packed real tokens:

    x = dropout(LayerNorm(word[ids] + token_type[types] + position[positions]))     (N, H)

The position table is a third lookup, by each token's position in its padded sequence; its
gradient is that lookup's (rows summed per position, as the padded step's sum over the batch).
"""
from __future__ import annotations

from typing import NamedTuple

from npbert import backend
from npbert.layers.embeddings import LN, POS, TYPE, WORD
from npbert.ops import DropoutCache, EmbeddingCache, LayerNormCache
from npbert.packed.dropout import packed_dropout_backward, packed_dropout_forward
from npbert.packed.packing import Packing


class PackedEmbeddingsCache(NamedTuple):
    words: EmbeddingCache
    token_types: EmbeddingCache
    positions: EmbeddingCache
    norm: LayerNormCache
    dropout: DropoutCache


def packed_embeddings_forward(input_ids, token_type_ids, packing: Packing, params, config, rng):
    # input_ids, token_type_ids: (B, T) -> x: (N, H)
    words, w_cache = backend.embedding_forward(packing.pack(input_ids), params[WORD], config.pad_token_id)  # (N, H)
    types, t_cache = backend.embedding_forward(packing.pack(token_type_ids), params[TYPE])                   # (N, H)
    positions, p_cache = backend.embedding_forward(packing.positions, params[POS])                           # (N, H)
    s = words + types + positions                                                                             # (N, H)
    e, ln_cache = backend.layernorm_forward(s, params[LN + ".weight"], params[LN + ".bias"], config.layer_norm_eps)
    x, drop = packed_dropout_forward(e, packing, None, config.hidden_dropout_prob, rng)                       # (N, H)
    return x, PackedEmbeddingsCache(w_cache, t_cache, p_cache, ln_cache, drop)


def packed_embeddings_backward(dx, cache: PackedEmbeddingsCache):
    # dx: (N, H) -> grads by HF name
    g = {}
    de = packed_dropout_backward(dx, cache.dropout)                                    # (N, H)
    ds, g[LN + ".weight"], g[LN + ".bias"] = backend.layernorm_backward(de, cache.norm)   # (N, H)
    g[WORD] = backend.embedding_backward(ds, cache.words)                               # (V, H), [PAD] row 0
    g[TYPE] = backend.embedding_backward(ds, cache.token_types)                         # (types, H)
    g[POS] = backend.embedding_backward(ds, cache.positions)                            # (P, H)
    return g
