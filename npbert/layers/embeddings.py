"""The BERT embeddings block (docs/layers/embeddings.md):

    x = dropout(LayerNorm(word[input_ids] + position[0..T-1] + token_type[token_type_ids]))

Parameter names are Hugging Face's under "bert.embeddings.". As in Hugging Face, the word
lookup gives row pad_token_id no gradient (padding_idx); the tied MLM decoder still does.
"""
from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.ops import DropoutCache, EmbeddingCache, LayerNormCache
from npbert.trace import NO_TRACE

WORD, POS, TYPE, LN = ("bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
                       "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm")


class EmbeddingsCache(NamedTuple):
    words: EmbeddingCache         # the word_embeddings lookup
    token_types: EmbeddingCache   # the token_type_embeddings lookup
    norm: LayerNormCache          # LayerNorm
    dropout: DropoutCache
    position_shape: tuple         # (P, H), the position table's: rows 0..T-1 get the gradient


def bert_embeddings_forward(input_ids, token_type_ids, params, config, rng, trace=NO_TRACE):
    # input_ids, token_type_ids: (B, T) integer; trace: scope "bert.embeddings"
    T = input_ids.shape[1]
    words, w_cache = backend.embedding_forward(input_ids, params[WORD], config.pad_token_id)  # (B, T, H)
    types, t_cache = backend.embedding_forward(token_type_ids, params[TYPE])    # (B, T, H)
    positions = params[POS][:T]                                                # (T, H)
    s = words + types + positions                                              # (B, T, H)
    e, ln_cache = backend.layernorm_forward(s, params[LN + ".weight"], params[LN + ".bias"], config.layer_norm_eps)
    x, drop = backend.dropout_forward(e, config.hidden_dropout_prob, rng)      # (B, T, H)
    trace.record(("word_embeddings", "position_embeddings", "token_type_embeddings", "sum", "LayerNorm", ""),
                 (words, positions, types, s, e, x))
    return x, EmbeddingsCache(w_cache, t_cache, ln_cache, drop, params[POS].shape)


def bert_embeddings_backward(dx, cache: EmbeddingsCache, trace=NO_TRACE):
    # dx: (B, T, H) -> grads by HF name
    g = {}
    trace.record_grad("", dx)
    de = backend.dropout_backward(dx, cache.dropout)                            # (B, T, H)
    trace.record_grad("LayerNorm", de)
    ds, g[LN + ".weight"], g[LN + ".bias"] = backend.layernorm_backward(de, cache.norm)   # (B, T, H)
    trace.record_grad(("sum", "word_embeddings", "position_embeddings", "token_type_embeddings"),
                      lambda: (ds, ds, ds.sum(axis=0), ds))   # a sum passes its gradient to each term
    g[WORD] = backend.embedding_backward(ds, cache.words)                       # (V, H), [PAD] row 0 (HF's padding_idx)
    g[TYPE] = backend.embedding_backward(ds, cache.token_types)                 # (types, H)
    g[POS] = np.zeros(cache.position_shape, ds.dtype)                           # (P, H)
    g[POS][:ds.shape[1]] = ds.sum(axis=0)                                       # rows 0..T-1, summed over batch
    return g
