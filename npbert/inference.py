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
adds an exact 0 there but is absent here): tests/model/test_inference.py holds float64 to 1e-12
and float32 to 2e-6 of the scale. Positions that are padding are not computed: the sequence
output has zeros there (Hugging Face returns values computed from padding, which nothing
should read). The pooler reads position 0, which must be a real token.
"""
from __future__ import annotations

import numpy as np

from npbert import backend
from npbert.errors import InputError
from npbert.heads.task_model import task_model_forward
from npbert.layers.mlm_head import BIAS, WORD, mlm_transform_forward
from npbert.model import bert_forward, bert_model_forward, make_layout, pretraining_forward
from npbert.model_inputs import check_inputs, check_labels, check_range
from npbert.ops import decoder_top_k

__all__ = ["bert_inference", "masked_lm_inference", "masked_lm_log_probs", "pretraining_inference", "task_inference"]


def bert_inference(params, config, input_ids, token_type_ids=None, attention_mask=None):
    """bert_forward's (sequence_output (B, T, H), pooled (B, H) or None) for inference: no
    dropout, no caches, padding not computed (zeros in the sequence output)."""
    (h, pooled), cache = bert_forward(params, config, input_ids, token_type_ids, attention_mask, packed=True,
                                      keep_caches=False)                                # (N, H)
    return cache.layout.batched(h), pooled                                             # (B, T, H)


def pretraining_inference(params, config, input_ids, token_type_ids=None, attention_mask=None,
                          mlm_positions=None, mlm_labels=None, nsp_labels=None) -> dict:
    """pretraining_forward's outputs (loss, mlm_loss, nsp_loss, mlm_predictions, nsp_logits, labels)
    without dropout or caches, the last layer and the MLM head only at the masked positions
    (which must be real tokens) and [CLS], the decoder and its loss fused (no (M, V) logits)."""
    out, _ = pretraining_forward(params, config, input_ids, token_type_ids, attention_mask, mlm_positions, mlm_labels,
                                 nsp_labels, packed=True, keep_caches=False)
    return out


# --- the fine-tuning heads and the masked-LM head alone, on the packed forward -----------------------

def task_inference(head, params, config, input_ids, token_type_ids=None, attention_mask=None, **targets) -> dict:
    """task_model_forward(head, ..., rng=None)'s outputs (npbert/heads/task_model.py) for inference: the
    packed forward without caches, its last layer only at [CLS] for a head on [CLS]; a head on
    every token gets zeros at padding (which its loss must not score: IGNORE_INDEX there, as the
    encoding pads). A head whose loss reads padding (QA) and a feature-based model keep their
    padded forward (task_model_forward says why)."""
    return task_model_forward(head, params, config, input_ids, token_type_ids, attention_mask, packed=True,
                              keep_caches=False, **targets)[0]


def masked_lm_inference(params, config, input_ids, token_type_ids=None, attention_mask=None,
                        mlm_positions=None, top_k=5):
    """-> (ids (M, k), log p (M, k) float64): the MLM head's k likeliest tokens at each of
    mlm_positions (flat indices into B*T, real tokens), likeliest first: fill-mask. The last layer
    runs only there (and at [CLS] when there is a pooler); the decoder a block of rows at a time,
    no (M, V) logits kept. Neither the NSP head nor a pooler is needed (BertForMaskedLM)."""
    if not isinstance(top_k, (int, np.integer)) or isinstance(top_k, bool) or top_k < 1:
        raise InputError(f"top_k must be an integer >= 1, got {top_k!r}")
    t = _masked_rows(params, config, input_ids, token_type_ids, attention_mask, mlm_positions)   # (M, H)
    return decoder_top_k(t, params[WORD], params[BIAS], top_k)


def masked_lm_log_probs(params, config, input_ids, token_type_ids=None, attention_mask=None,
                        mlm_positions=None, targets=None):
    """-> (M,) float64 log p(targets[i] | the batch) at mlm_positions[i] (flat indices into B*T,
    real tokens): a log-softmax at the target, accumulated in float64, of logits made a block of
    rows at a time and never kept (pseudo-log-likelihood scoring). The last layer only there."""
    t = _masked_rows(params, config, input_ids, token_type_ids, attention_mask, mlm_positions)   # (M, H)
    targets = np.asarray([] if targets is None else targets).reshape(-1)
    if targets.shape != (len(t),):
        raise InputError(f"targets has shape {targets.shape} but mlm_positions has ({len(t)},): one target each")
    check_range("targets", targets, config.vocab_size, "vocab_size")
    return backend.decoder_log_softmax_at(t, params[WORD], params[BIAS], targets.astype(np.int64))


def _masked_rows(params, config, input_ids, token_type_ids, attention_mask, mlm_positions):
    """The MLM head's transform (M, H) at mlm_positions: the packed forward, its last layer only there."""
    input_ids, token_type_ids, attention_mask = check_inputs(config, input_ids, token_type_ids, attention_mask)
    B, T = input_ids.shape
    mlm_positions, _, _ = check_labels(config, B, T, mlm_positions, None, None)
    layout = make_layout(params, attention_mask, packed=True, read=mlm_positions)
    (h, _), _ = bert_model_forward(layout, params, config, input_ids, token_type_ids, keep_caches=False)  # (R, H)
    return mlm_transform_forward(h, layout.index(mlm_positions), params, config)[0]         # (M, H)
