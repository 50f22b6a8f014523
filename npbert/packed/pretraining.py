"""BertForPreTraining on the packed real tokens (npbert/model.py's pretraining_forward and
pretraining_backward, same arguments, same outputs): the last layer computes only the masked
positions and [CLS], the ~16 % of the rows the two heads read.

    out, cache = packed_pretraining_forward(params, config, input_ids, token_type_ids, attention_mask,
                                            mlm_positions, mlm_labels, nsp_labels, rng=None)
    grads = packed_pretraining_backward(cache, dloss=1.0)

The masked positions and every sequence's position 0 must be real tokens (attention mask 1).
Nothing is traced: the trace (npbert/trace.py) records the padded reference's intermediates,
padding included, which is what a port compares against.
"""
from __future__ import annotations

from npbert.model import (POOLER_WEIGHT, PretrainingCache, check_inputs, check_labels, pretraining_heads_backward,
                          pretraining_heads_forward, require_pooler, with_head_grads)
from npbert.packed.bert import packed_bert_backward, packed_bert_forward_checked


def packed_pretraining_forward(params, config, input_ids, token_type_ids=None, attention_mask=None,
                               mlm_positions=None, mlm_labels=None, nsp_labels=None, rng=None, keep_caches=True):
    """pretraining_forward's (outputs dict, cache) from the packed step; keep_caches=False: forward
    only (no backward possible), as inference."""
    input_ids, token_type_ids, attention_mask = check_inputs(config, input_ids, token_type_ids, attention_mask)
    B, T = input_ids.shape
    mlm_positions, mlm_labels, nsp_labels = check_labels(config, B, T, mlm_positions, mlm_labels, nsp_labels)
    if POOLER_WEIGHT not in params:
        require_pooler(None, "next-sentence prediction")
    (h, pooled), bert = packed_bert_forward_checked(params, config, input_ids, token_type_ids, attention_mask, rng,
                                                    mlm_positions, keep_caches)           # (R, H), (B, H)
    out, heads = pretraining_heads_forward(h[None], bert.index(mlm_positions), pooled, params, config, mlm_labels,
                                           nsp_labels)                                  # the last layer's rows
    return out, PretrainingCache(bert, *heads)


def packed_pretraining_backward(cache: PretrainingCache, dloss=1.0):
    """Gradients of the pretraining loss for every parameter (pretraining_backward's)."""
    dh, dpooled, head_grads = pretraining_heads_backward(cache, dloss)                 # (1, R, H), (B, H)
    return with_head_grads(packed_bert_backward(dh[0], dpooled, cache.bert), head_grads)
