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

from typing import NamedTuple

from npbert import backend
from npbert.layers.mlm_head import MlmHeadCache, mlm_head_backward, mlm_head_forward
from npbert.layers.nsp_head import nsp_head_backward, nsp_head_forward
from npbert.model import POOLER_WEIGHT, WORD_EMBEDDINGS, check_inputs, check_labels, require_pooler
from npbert.ops import CrossEntropyCache, LinearCache
from npbert.packed.bert import PackedBertCache, packed_bert_backward, packed_bert_forward


class PackedPretrainingCache(NamedTuple):
    bert: PackedBertCache
    mlm_head: MlmHeadCache
    nsp_head: LinearCache
    mlm_loss: CrossEntropyCache
    nsp_loss: CrossEntropyCache


def packed_pretraining_forward(params, config, input_ids, token_type_ids=None, attention_mask=None,
                               mlm_positions=None, mlm_labels=None, nsp_labels=None, rng=None, keep_caches=True):
    """pretraining_forward's (outputs dict, cache) from the packed step; keep_caches=False: forward
    only (no backward possible), as inference."""
    input_ids, token_type_ids, attention_mask = check_inputs(config, input_ids, token_type_ids, attention_mask)
    B, T = input_ids.shape
    mlm_positions, mlm_labels, nsp_labels = check_labels(config, B, T, mlm_positions, mlm_labels, nsp_labels)
    if POOLER_WEIGHT not in params:
        require_pooler(None, "next-sentence prediction")
    (h, pooled), bert = packed_bert_forward(params, config, input_ids, token_type_ids, attention_mask, rng,
                                            read=mlm_positions, keep_caches=keep_caches)  # (R, H), (B, H)
    mlm_logits, mlm_cache = mlm_head_forward(h[None], bert.index(mlm_positions), params, config)   # (M, V)
    nsp_logits, nsp_cache = nsp_head_forward(pooled, params)                                       # (B, 2)
    mlm_loss, mlm_ce = backend.cross_entropy_forward(mlm_logits, mlm_labels)
    nsp_loss, nsp_ce = backend.cross_entropy_forward(nsp_logits, nsp_labels)
    out = dict(loss=mlm_loss + nsp_loss, mlm_loss=mlm_loss, nsp_loss=nsp_loss,
               mlm_logits=mlm_logits, nsp_logits=nsp_logits, mlm_labels=mlm_labels, nsp_labels=nsp_labels)
    return out, PackedPretrainingCache(bert, mlm_cache, nsp_cache, mlm_ce, nsp_ce)


def packed_pretraining_backward(cache: PackedPretrainingCache, dloss=1.0):
    """Gradients of the pretraining loss for every parameter (pretraining_backward's)."""
    dmlm_logits = backend.cross_entropy_backward(dloss, cache.mlm_loss)              # (M, V)
    dnsp_logits = backend.cross_entropy_backward(dloss, cache.nsp_loss)              # (B, 2)
    dh, g_mlm = mlm_head_backward(dmlm_logits, cache.mlm_head)                       # (1, R, H)
    dpooled, g_nsp = nsp_head_backward(dnsp_logits, cache.nsp_head)                  # (B, H)
    grads = packed_bert_backward(dh[0], dpooled, cache.bert)
    grads[WORD_EMBEDDINGS] += g_mlm.pop(WORD_EMBEDDINGS)    # tied decoder: both uses add up
    grads.update(g_mlm)
    grads.update(g_nsp)
    return grads
