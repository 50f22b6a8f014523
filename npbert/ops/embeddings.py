"""The BERT embeddings block (docs/layers/embeddings.md):

    x = dropout(LayerNorm(word[input_ids] + position[0..T-1] + token_type[token_type_ids]))

Parameter names are Hugging Face's under "bert.embeddings.".
"""
import numpy as np

from npbert import backend

WORD, POS, TYPE, LN = ("bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
                       "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm")


def bert_embeddings_forward(input_ids, token_type_ids, params, config, rng):
    # input_ids, token_type_ids: (B, T) integer
    T = input_ids.shape[1]
    words, w_cache = backend.embedding_forward(input_ids, params[WORD])         # (B, T, H)
    types, t_cache = backend.embedding_forward(token_type_ids, params[TYPE])    # (B, T, H)
    positions = params[POS][:T]                                                # (T, H)
    e, ln_cache = backend.layernorm_forward(words + types + positions, params[LN + ".weight"],
                                            params[LN + ".bias"], config.layer_norm_eps)
    x, drop_mask = backend.dropout_forward(e, config.hidden_dropout_prob, rng)  # (B, T, H)
    return x, (w_cache, t_cache, ln_cache, drop_mask, params[POS].shape)


def bert_embeddings_backward(dx, cache):
    # dx: (B, T, H) -> grads by HF name
    w_cache, t_cache, ln_cache, drop_mask, pos_shape = cache
    g = {}
    de, g[LN + ".weight"], g[LN + ".bias"] = backend.layernorm_backward(
        backend.dropout_backward(dx, drop_mask), ln_cache)                      # (B, T, H)
    g[WORD] = backend.embedding_backward(de, w_cache)                            # (V, H)
    g[TYPE] = backend.embedding_backward(de, t_cache)                            # (types, H)
    g[POS] = np.zeros(pos_shape, de.dtype)                                       # (P, H)
    g[POS][:de.shape[1]] = de.sum(axis=0)                                        # rows 0..T-1, summed over batch
    return g
