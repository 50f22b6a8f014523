"""Inference without the work of padding: BertModel on the packed layout (npbert/model.py,
npbert/layers/layout.py) with no dropout and no caches, the last encoder layer only at the
rows the caller reads.

bert_forward computes every position of the (B, T) batch, padding included: a batch of
sentences of 30 to 128 tokens pays for 128 each. Here the real tokens are packed into one
(N, H) matrix, every op but attention runs on N rows, attention runs sequence by sequence on
its own n x n scores (no padded queries, no padded keys), and nothing is kept for a backward
(each layer's cache is dropped as soon as the next layer has its input). This is the "remove
padding" of FasterTransformer and of ONNX Runtime's packed mode on GPUs.

The results are bert_forward's at the real positions up to float rounding (the same ops on
the same rows; a matmul with fewer rows may block its sums differently, and a masked key
adds an exact 0 there but is absent here): tests/test_inference.py holds float64 to 1e-12
and float32 to 2e-6 of the scale. Positions that are padding are not computed: the sequence
output has zeros there (Hugging Face returns values computed from padding, which nothing
should read). The pooler reads position 0, which must be a real token.
"""
from __future__ import annotations

from npbert.layers.mlm_head import mlm_head_forward
from npbert.model import (bert_model_forward, check_inputs, check_labels, make_layout, packed_bert_forward,
                          packed_pretraining_forward)
from npbert.task_model import task_model_forward

__all__ = ["bert_inference", "masked_lm_inference", "pretraining_inference", "task_inference"]


def bert_inference(params, config, input_ids, token_type_ids=None, attention_mask=None):
    """bert_forward's (sequence_output (B, T, H), pooled (B, H) or None) for inference: no
    dropout, no caches, padding not computed (zeros in the sequence output)."""
    (h, pooled), cache = packed_bert_forward(params, config, input_ids, token_type_ids, attention_mask,
                                             keep_caches=False)                         # (N, H)
    return cache.layout.batched(h), pooled                                             # (B, T, H)


def pretraining_inference(params, config, input_ids, token_type_ids=None, attention_mask=None,
                          mlm_positions=None, mlm_labels=None, nsp_labels=None) -> dict:
    """pretraining_forward's outputs (loss, mlm_loss, nsp_loss, mlm_logits, nsp_logits, labels)
    without dropout or caches, the last layer and the MLM head only at the masked positions
    (which must be real tokens) and [CLS]."""
    out, _ = packed_pretraining_forward(params, config, input_ids, token_type_ids, attention_mask, mlm_positions,
                                        mlm_labels, nsp_labels, keep_caches=False)
    return out


# --- the fine-tuning heads and the masked-LM head alone, on the packed forward -----------------------

def task_inference(head, params, config, input_ids, token_type_ids=None, attention_mask=None, **targets) -> dict:
    """task_model_forward(head, ..., rng=None)'s outputs (npbert/task_model.py) for inference: the
    packed forward without caches, its last layer only at [CLS] for a head on [CLS]; a head on
    every token gets zeros at padding (which its loss must not score: IGNORE_INDEX there, as the
    encoding pads). A head whose loss reads padding (QA) and a feature-based model keep their
    padded forward (task_model_forward says why)."""
    return task_model_forward(head, params, config, input_ids, token_type_ids, attention_mask, packed=True,
                              keep_caches=False, **targets)[0]


def masked_lm_inference(params, config, input_ids, token_type_ids=None, attention_mask=None,
                        mlm_positions=None):
    """-> the MLM head's logits (M, V) at mlm_positions (flat indices into B*T, real tokens), the
    last layer only there (and at [CLS] when there is a pooler): fill-mask. Neither the NSP head
    nor a pooler is needed (BertForMaskedLM)."""
    input_ids, token_type_ids, attention_mask = check_inputs(config, input_ids, token_type_ids, attention_mask)
    B, T = input_ids.shape
    mlm_positions, _, _ = check_labels(config, B, T, mlm_positions, None, None)
    layout = make_layout(params, attention_mask, packed=True, read=mlm_positions)
    (h, _), _ = bert_model_forward(layout, params, config, input_ids, token_type_ids, keep_caches=False)  # (R, H)
    return mlm_head_forward(h[None], layout.index(mlm_positions), params, config)[0]   # (M, V)
