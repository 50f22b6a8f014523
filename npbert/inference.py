"""Inference without the work of padding: BERT's forward on the real tokens only.

bert_forward computes every position of the (B, T) batch, padding included: a batch of
sentences of 30 to 128 tokens pays for 128 each. Every op of a BERT layer but attention
works on one token at a time (the linear layers, GELU, the residual adds, LayerNorm), so
here the real tokens are packed into one (N, H) matrix, N = attention_mask.sum(), those ops
run on N rows instead of B*T, and attention runs sequence by sequence on its own n_b x n_b
scores (no padded queries, no padded keys). This is the "remove padding" of FasterTransformer
and of ONNX Runtime's packed mode on GPUs; dropout is off and no cache is kept (nothing here
has a backward).

The results are bert_forward's at the real positions up to float rounding (the same ops on
the same rows; a matmul with fewer rows may block its sums differently, and a masked key
adds an exact 0 there but is absent here): tests/test_inference.py holds float64 to 1e-12
and float32 to 2e-6 of the scale. Positions that are padding are not computed: the sequence
output has zeros there (Hugging Face returns values computed from padding, which nothing
should read).
"""
from __future__ import annotations

import numpy as np

from npbert import backend
from npbert.errors import InputError
from npbert.feature_based import feature_choice
from npbert.heads.head import CLS
from npbert.layers.attention import K, O, Q, V
from npbert.layers.embeddings import LN as EMB_LN
from npbert.layers.embeddings import POS, TYPE, WORD
from npbert.layers.encoder import layer_params
from npbert.layers.encoder_layer import LN1, LN2
from npbert.layers.feedforward import feedforward_forward
from npbert.layers.mlm_head import mlm_head_forward
from npbert.layers.nsp_head import nsp_head_forward
from npbert.layers.pooler import pooler_forward
from npbert.model import POOLER_WEIGHT, check_inputs, check_labels, require_pooler
from npbert.ops import IGNORE_INDEX
from npbert.ops.packed_attention import sequence_starts
from npbert.task_model import check_targets, flatten_choices, task_model_forward
from npbert.trace import NO_TRACE


class Packing:
    """Where the real tokens of a (B, T) batch sit in the packed (N, ...) arrays."""

    def __init__(self, attention_mask):
        mask = np.asarray(attention_mask) != 0                     # (B, T)
        self.shape = mask.shape
        self.flat = np.flatnonzero(mask)                           # (N,) flat (b, t) of each real token
        self.lengths = mask.sum(axis=1)                            # (B,)
        self.starts = sequence_starts(self.lengths)                # (B,) first packed row of b
        self.positions = np.nonzero(mask)[1]                       # (N,) position ids of the real tokens
        self.contiguous = bool((mask == (np.arange(mask.shape[1]) < self.lengths[:, None])).all())

    def pack(self, a):
        # a: (B, T, ...) -> (N, ...)
        return a.reshape(-1, *a.shape[2:])[self.flat]

    def unpack(self, x):
        # x: (N, ...) -> (B, T, ...), zeros where the mask is 0
        out = np.zeros((self.shape[0] * self.shape[1], *x.shape[1:]), x.dtype)
        out[self.flat] = x
        return out.reshape(*self.shape, *x.shape[1:])

    def packed_index(self, flat_positions):
        """Flat indices into B*T -> rows of the packed arrays; each must be a real token."""
        where = np.full(self.shape[0] * self.shape[1], -1)
        where[self.flat] = np.arange(len(self.flat))
        rows = where[flat_positions]
        if (rows < 0).any():
            bad = int(flat_positions[np.argmax(rows < 0)])
            raise InputError(f"mlm_positions has {bad} (sequence {bad // self.shape[1]}, position "
                             f"{bad % self.shape[1]}), a padded position: the MLM head predicts real tokens only")
        return rows


def packed_self_attention(x, packing: Packing, params, num_heads):
    # x: (N, H) packed -> (N, H); each sequence attends within itself, no mask needed
    q = backend.linear_forward(x, params[Q + ".weight"], params[Q + ".bias"])[0]        # (N, H)
    k = backend.linear_forward(x, params[K + ".weight"], params[K + ".bias"])[0]        # (N, H)
    v = backend.linear_forward(x, params[V + ".weight"], params[V + ".bias"])[0]        # (N, H)
    context = backend.packed_attention(q, k, v, packing.lengths, num_heads)    # (N, H)
    return backend.linear_forward(context, params[O + ".weight"], params[O + ".bias"])[0]  # (N, H)


def packed_encoder_layer(x, packing: Packing, params, config):
    # x: (N, H) -> (N, H): encoder_layer_forward without dropout, caches or padding
    a = packed_self_attention(x, packing, params, config.num_attention_heads)
    h = backend.layernorm_forward(x + a, params[LN1 + ".weight"], params[LN1 + ".bias"], config.layer_norm_eps)[0]
    f, _ = feedforward_forward(h, params, config.hidden_act)                       # (N, H)
    return backend.layernorm_forward(h + f, params[LN2 + ".weight"], params[LN2 + ".bias"], config.layer_norm_eps)[0]


def packed_bert(params, config, input_ids, token_type_ids=None, attention_mask=None):
    """-> (h (N, H) the real tokens' sequence output, packed; pooled (B, H) or None; Packing)."""
    input_ids, token_type_ids, attention_mask = check_inputs(config, input_ids, token_type_ids, attention_mask)
    packing = Packing(attention_mask)
    ids, types = packing.pack(input_ids), packing.pack(token_type_ids)       # (N,)
    words = backend.embedding_forward(ids, params[WORD], config.pad_token_id)[0]  # (N, H)
    s = words + backend.embedding_forward(types, params[TYPE])[0] + params[POS][packing.positions]
    x = backend.layernorm_forward(s, params[EMB_LN + ".weight"], params[EMB_LN + ".bias"], config.layer_norm_eps)[0]
    for i in range(config.num_hidden_layers):
        x = packed_encoder_layer(x, packing, layer_params(params, i), config)   # (N, H)
    pooled = None
    if POOLER_WEIGHT in params:
        first = x[packing.starts] if packing.contiguous else packing.unpack(x)[:, 0]   # (B, H) position 0: [CLS]
        # (position 0 padded, as in a left-padded batch: bert_forward pools what it computed there, this a 0 row)
        pooled = pooler_forward(first[:, None], params)[0]                      # (B, H)
    return x, pooled, packing


def bert_inference(params, config, input_ids, token_type_ids=None, attention_mask=None):
    """bert_forward's (sequence_output (B, T, H), pooled (B, H) or None) for inference: no
    dropout, no caches, padding not computed (zeros in the sequence output)."""
    h, pooled, packing = packed_bert(params, config, input_ids, token_type_ids, attention_mask)
    return packing.unpack(h), pooled


def pretraining_inference(params, config, input_ids, token_type_ids=None, attention_mask=None,
                          mlm_positions=None, mlm_labels=None, nsp_labels=None) -> dict:
    """pretraining_forward's outputs (loss, mlm_loss, nsp_loss, mlm_logits, nsp_logits, labels)
    without dropout or caches, the MLM head at the masked positions (which must be real tokens)."""
    h, pooled, packing = packed_bert(params, config, input_ids, token_type_ids, attention_mask)
    B, T = packing.shape
    mlm_positions, mlm_labels, nsp_labels = check_labels(config, B, T, mlm_positions, mlm_labels, nsp_labels)
    rows = packing.packed_index(mlm_positions)                                  # (M,) rows of h
    mlm_logits, _ = mlm_head_forward(h[None], rows, params, config)             # (M, V)
    nsp_logits, _ = nsp_head_forward(require_pooler(pooled, "next-sentence prediction"), params)  # (B, 2)
    mlm_loss = backend.cross_entropy_forward(mlm_logits, mlm_labels)[0]
    nsp_loss = backend.cross_entropy_forward(nsp_logits, nsp_labels)[0]
    return dict(loss=mlm_loss + nsp_loss, mlm_loss=mlm_loss, nsp_loss=nsp_loss, mlm_logits=mlm_logits,
                nsp_logits=nsp_logits, mlm_labels=mlm_labels, nsp_labels=nsp_labels)


# --- the fine-tuning heads and the masked-LM head alone, on the packed forward -----------------------

def task_inference(head, params, config, input_ids, token_type_ids=None, attention_mask=None, **targets) -> dict:
    """task_model_forward(head, ..., rng=None)'s outputs (npbert/task_model.py) for inference: a
    head that reads [CLS] takes the packed forward's pooled output, one that reads every token its
    sequence output (zeros at padding, which its loss must not score: IGNORE_INDEX there, as the
    encoding pads). Two keep the padded forward: a head whose loss reads padded positions (QA: its
    softmax runs over all T positions, padding included, as Hugging Face's does, so what padding
    computes changes the loss) and a feature-based model (its own forward: bert_hidden_states)."""
    if head.reads_padding or feature_choice(config) is not None:
        return task_model_forward(head, params, config, input_ids, token_type_ids, attention_mask, **targets)[0]
    check_targets(head, targets)
    lead = None
    if head.choices:
        input_ids, token_type_ids, attention_mask, lead = flatten_choices(input_ids, token_type_ids, attention_mask)
    if head.reads == CLS:
        _, pooled, _ = packed_bert(params, config, input_ids, token_type_ids, attention_mask)
        x = require_pooler(pooled, head.architecture)                                    # (B, H), B*C with choices
    else:
        check_unscored_padding(targets, attention_mask)
        x, _ = bert_inference(params, config, input_ids, token_type_ids, attention_mask)  # (B, T, H)
    if lead is not None:
        x = x.reshape(*lead, x.shape[-1])                                                # (B, C, H)
    return head.forward(x, params, config, targets, None, NO_TRACE)[0]


def check_unscored_padding(targets, attention_mask) -> None:
    """A per-token target (B, T) scores no padded position: the packed forward does not compute them."""
    if attention_mask is None:
        return
    padded = np.asarray(attention_mask) == 0                                           # (B, T)
    for name, target in targets.items():
        scored = np.asarray(target) != IGNORE_INDEX
        if scored.shape == padded.shape and (scored & padded).any():
            b, t = (int(i) for i in np.argwhere(scored & padded)[0])
            raise InputError(f"{name}[{b}, {t}] scores a padded position (attention_mask 0): give it "
                             f"{IGNORE_INDEX}, padding is not computed at inference")


def masked_lm_inference(params, config, input_ids, token_type_ids=None, attention_mask=None,
                        mlm_positions=None):
    """-> the MLM head's logits (M, V) at mlm_positions (flat indices into B*T, real tokens), on
    the packed forward: fill-mask. Neither the NSP head nor a pooler is needed (BertForMaskedLM)."""
    h, _, packing = packed_bert(params, config, input_ids, token_type_ids, attention_mask)
    B, T = packing.shape
    mlm_positions, _, _ = check_labels(config, B, T, mlm_positions, None, None)
    return mlm_head_forward(h[None], packing.packed_index(mlm_positions), params, config)[0]   # (M, V)
