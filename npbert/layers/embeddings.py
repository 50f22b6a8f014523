"""The BERT embeddings block (docs/layers/embeddings.md), on the layout's rows:

    x = dropout(LayerNorm(word[input_ids] + token_type[token_type_ids] + position[position_ids]))

Parameter names are Hugging Face's under "bert.embeddings.". As in Hugging Face, the word
lookup gives row pad_token_id no gradient (padding_idx); the tied MLM decoder still does. The
position table is a third lookup, by each row's position in its sequence: its gradient sums
the rows at each position (over the batch, on the padded layout).
"""
from typing import NamedTuple

from npbert import backend
from npbert.ops import DropoutCache, EmbeddingCache, LayerNormCache
from npbert.trace import NO_TRACE

WORD, POS, TYPE, LN = ("bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
                       "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm")


class EmbeddingsCache(NamedTuple):
    words: EmbeddingCache         # the word_embeddings lookup
    token_types: EmbeddingCache   # the token_type_embeddings lookup
    positions: EmbeddingCache     # the position_embeddings lookup
    norm: LayerNormCache          # LayerNorm
    dropout: DropoutCache


def bert_embeddings_forward(input_ids, token_type_ids, layout, params, config, rng, trace=NO_TRACE):
    # input_ids, token_type_ids: (B, T) integer -> x: (N, H) at the layout's rows; trace: scope "bert.embeddings"
    words, w_cache = backend.embedding_forward(layout.rows_of(input_ids), params[WORD], config.pad_token_id)  # (N, H)
    types, t_cache = backend.embedding_forward(layout.rows_of(token_type_ids), params[TYPE])                  # (N, H)
    positions, p_cache = backend.embedding_forward(layout.positions, params[POS])                             # (N, H)
    s = words + types + positions                                                                             # (N, H)
    e, ln_cache = backend.layernorm_forward(s, params[LN + ".weight"], params[LN + ".bias"], config.layer_norm_eps)
    x, drop = layout.dropout(e, config.hidden_dropout_prob, rng)                                              # (N, H)
    trace.record_rows("word_embeddings", words)
    trace.record("position_embeddings", lambda: params[POS][:layout.shape[1]])      # (T, H), every sequence's
    trace.record_rows(("token_type_embeddings", "sum", "LayerNorm", ""), (types, s, e, x))
    return x, EmbeddingsCache(w_cache, t_cache, p_cache, ln_cache, drop)


def bert_embeddings_backward(dx, cache: EmbeddingsCache, trace=NO_TRACE):
    # dx: (N, H) -> grads by HF name
    g = {}
    trace.record_grad_rows("", dx)
    de = backend.dropout_backward(dx, cache.dropout)                                    # (N, H)
    trace.record_grad_rows("LayerNorm", de)
    ds, g[LN + ".weight"], g[LN + ".bias"] = backend.layernorm_backward(de, cache.norm)  # (N, H)
    g[WORD] = backend.embedding_backward(ds, cache.words)             # (V, H), [PAD] row 0 (HF's padding_idx)
    g[TYPE] = backend.embedding_backward(ds, cache.token_types)       # (types, H)
    g[POS] = backend.embedding_backward(ds, cache.positions)          # (P, H), the rows at each position summed
    # a sum passes its gradient to each term; the position table's is summed over the batch
    trace.record_grad_rows(("sum", "word_embeddings"), (ds, ds))
    trace.record_grad("position_embeddings", lambda: trace.batched(ds).sum(axis=0))
    trace.record_grad_rows("token_type_embeddings", ds)
    return g
