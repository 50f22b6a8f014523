"""The BERT model: forward/backward written out layer by layer.

    bert_forward: BertModel, embeddings -> encoder stack -> pooler; (B, T, H) out on the padded
        layout (the reference), or packed=True: the real tokens, the last layer at the rows read
    bert_hidden_states: the embeddings' and every layer's output, forward only (frozen features)
    pretraining_forward: BertModel -> MLM head + NSP head -> losses   (BertForPreTraining;
        packed=True: the training step's layout)
    bert_model_forward: BertModel on a layout's rows, what the above and the task models build on

BertModel is written once, over rows (N, H); the layout (npbert/layers/layout.py) says which
positions are rows and picks the attention core. The backward functions call the layer
backwards in exactly the reverse order. Parameters and gradients are flat dicts keyed by
Hugging Face `BertForPreTraining` names (npbert/model_params.py: their shapes and initialisation).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.errors import InputError
from npbert.layers.embeddings import EmbeddingsCache, bert_embeddings_backward, bert_embeddings_forward
from npbert.layers.encoder import EncoderCache, encoder_backward, encoder_forward, layer_params
from npbert.layers.encoder_layer import encoder_layer_forward
from npbert.layers.layout import Packed, Padded
from npbert.layers.mlm_head import (MlmHeadCache, MlmLossCache, mlm_head_backward, mlm_head_forward,
                                    mlm_loss_backward, mlm_loss_forward)
from npbert.layers.nsp_head import nsp_head_backward, nsp_head_forward
from npbert.layers.pooler import PoolerCache, pooler_backward, pooler_forward
from npbert.model_inputs import check_inputs, check_labels
from npbert.model_params import POOLER_WEIGHT, WORD_EMBEDDINGS
from npbert.ops import CrossEntropyCache, LinearCache
from npbert.trace import NO_TRACE, Trace


# --- BertModel ------------------------------------------------------------------------------------

class BertCache(NamedTuple):
    layout: Padded | Packed          # the rows the model computed (npbert/layers/layout.py)
    embeddings: EmbeddingsCache | None   # None: forward only (keep_caches=False)
    encoder: EncoderCache
    pooler: PoolerCache | None       # None: a model without a pooler
    trace: Trace | object            # where the backward records gradients (NO_TRACE: nowhere)


def make_layout(params, attention_mask, packed=False, read=None):
    """The rows a BertModel forward computes (npbert/layers/layout.py): every position (padded,
    the reference), or the real tokens only (packed), its last layer only at read's rows (flat
    indices into B*T; None: every real token) and, with a pooler, [CLS]."""
    if packed:
        return Packed(attention_mask, read, cls=POOLER_WEIGHT in params)
    return Padded(attention_mask, params[WORD_EMBEDDINGS].dtype)


def traced(trace, layout):
    """The trace the layers record into: rows as the batch's (B, T, ...), after the mask bias. The
    padded layout's only: the trace is the reference's, padding included."""
    if trace is None or trace is NO_TRACE:
        return NO_TRACE
    if not isinstance(layout, Padded):
        raise InputError("a trace records the padded reference, padding included: run the padded model to trace it")
    trace = trace.over(layout.batched)
    trace.record("bert.mask_bias", layout.mask_bias)
    return trace


def bert_model_forward(layout, params, config, input_ids, token_type_ids, rng=None, trace=None, keep_caches=True):
    """BertModel, once for every layout: embeddings -> encoder -> pooler on the layout's rows.
    input_ids, token_type_ids: (B, T), checked (check_inputs). -> (h (R, H), the last layer at
    layout.read_rows, every row when None; pooled (B, H) or None without a pooler), cache.
    rng=None: no dropout (evaluation). trace: a npbert.trace.Trace (padded layout only) to record
    every named intermediate into (and, in the backward, their gradients). keep_caches=False:
    forward only, each layer's cache dropped once the next has its input (inference)."""
    trace = traced(trace, layout)
    x, emb_cache = bert_embeddings_forward(input_ids, token_type_ids, layout, params, config, rng,
                                           trace.scope("bert.embeddings"))                   # (N, H)
    h, enc_cache = encoder_forward(x, layout, params, config, rng, trace.scope("bert.encoder"), keep_caches)  # (R, H)
    pooled, pool_cache = None, None
    if POOLER_WEIGHT in params:
        cls = h[layout.cls_index()]                                                          # (B, H) [CLS]
        pooled, pool_cache = pooler_forward(cls, params, trace.scope("bert.pooler"))          # (B, H)
    return (h, pooled), BertCache(layout, emb_cache if keep_caches else None, enc_cache, pool_cache, trace)


def bert_model_backward(dh, dpooled, cache: BertCache):
    """dh: (R, H) at the forward's output rows, or None; dpooled: (B, H) or None -> grads for
    every bert.* parameter."""
    trace, grads = cache.trace, {}
    if cache.pooler is not None:      # a head that ignores the pooler still gets its (zero) gradient
        dpooled = np.zeros_like(cache.pooler.pooled) if dpooled is None else dpooled
        dcls, grads = pooler_backward(dpooled, cache.pooler, trace.scope("bert.pooler"))     # (B, H)
        dh_pool = np.zeros((cache.layout.output_rows(), dcls.shape[-1]), dcls.dtype)        # (R, H)
        dh_pool[cache.layout.cls_index()] = dcls                                            # only [CLS] gets gradient
        dh = dh_pool if dh is None else dh + dh_pool
    dx, g_enc = encoder_backward(dh, cache.encoder, trace.scope("bert.encoder"))            # (N, H)
    grads.update(g_enc)
    grads.update(bert_embeddings_backward(dx, cache.embeddings, trace.scope("bert.embeddings")))
    return grads


def bert_forward(params, config, input_ids, token_type_ids=None, attention_mask=None, rng=None, trace=None,
                 packed=False, read=None, keep_caches=True):
    """BertModel -> (sequence_output, pooled_output (B, H) or None without a pooler), cache.
    rng=None: no dropout (evaluation). trace: a npbert.trace.Trace to record every named
    intermediate into (and, in bert_backward, their gradients); the padded layout only.
    packed=False: the padded layout, the reference; sequence_output is (B, T, H).
    packed=True: the real tokens only, the last layer at `read` (flat indices into B*T the
    caller's head reads; None: every real token) and [CLS]; sequence_output is the rows h (R, H),
    row cache.layout.index(positions) holding those flat positions: the padded numbers there, up
    to rounding. keep_caches=False: forward only (no backward possible), as inference."""
    input_ids, token_type_ids, attention_mask = check_inputs(config, input_ids, token_type_ids, attention_mask)
    layout = make_layout(params, attention_mask, packed, read)
    (h, pooled), cache = bert_model_forward(layout, params, config, input_ids, token_type_ids, rng, trace,
                                            keep_caches)                                  # (R, H)
    return (h if packed else layout.batched(h), pooled), cache                            # (B, T, H) padded


def bert_backward(dh, dpooled, cache: BertCache):
    """dh: bert_forward's sequence_output's gradient ((B, T, H) padded, (R, H) packed) or None,
    dpooled: (B, H) or None -> grads for every bert.* parameter."""
    if dh is not None and isinstance(cache.layout, Padded):     # the packed forward gave rows already
        dh = cache.layout.rows_of(dh)                                                     # (B, T, H) -> (N, H)
    return bert_model_backward(dh, dpooled, cache)


def bert_hidden_states(params, config, input_ids, token_type_ids=None, attention_mask=None, layers=None) -> list:
    """Hugging Face's hidden_states in evaluation mode (no dropout): [the embeddings' output, layer
    1's output, ..., layer L's], L + 1 arrays (B, T, H); with `layers`, only the first layers + 1
    (the deeper layers are not run). Forward only, nothing kept for a backward: the frozen encoder
    of the feature-based approach (npbert/heads/feature_based.py)."""
    input_ids, token_type_ids, attention_mask = check_inputs(config, input_ids, token_type_ids, attention_mask)
    layout = make_layout(params, attention_mask)
    x, _ = bert_embeddings_forward(input_ids, token_type_ids, layout, params, config, None)   # (N, H)
    states = [layout.batched(x)]                                                              # (B, T, H)
    for i in range(config.num_hidden_layers if layers is None else layers):
        x, _ = encoder_layer_forward(x, layout, layer_params(params, i), config, None)        # (N, H)
        states.append(layout.batched(x))
    return states


def require_pooler(pooled, what: str):
    """The pooled output a head needs, or a clear error for params without a pooler."""
    if pooled is None:
        raise InputError(f"{what} needs the pooler ({POOLER_WEIGHT} and its bias), which these parameters do not "
                         "have (a BertModel saved without a pooler): add one, e.g. from init_params")
    return pooled


# --- BertForPreTraining ---------------------------------------------------------------------------

class PretrainingCache(NamedTuple):
    bert: BertCache
    mlm_head: MlmHeadCache | MlmLossCache   # MlmLossCache: the decoder and its loss fused
    nsp_head: LinearCache
    mlm_loss: CrossEntropyCache | None      # None: fused into mlm_head
    nsp_loss: CrossEntropyCache


def pretraining_forward(params, config, input_ids, token_type_ids=None, attention_mask=None,
                        mlm_positions=None, mlm_labels=None, nsp_labels=None, rng=None, trace=None, packed=False,
                        keep_caches=True, mlm_logits=None):
    """Masked LM + next-sentence prediction; loss = mean MLM cross-entropy + mean NSP cross-entropy
    (Hugging Face's BertForPreTraining loss).

    mlm_positions: (M,) flat indices into the B*T tokens; mlm_labels: (M,) their original ids
    (or IGNORE_INDEX); nsp_labels: (B,) 0 = IsNext, 1 = NotNext. Returns (outputs dict, cache):
    loss, mlm_loss, nsp_loss, mlm_predictions (M,) (each row's likeliest id), nsp_logits (B, 2),
    the labels, and mlm_logits (M, V) when made.
    trace: a npbert.trace.Trace to record every named intermediate into (see bert_forward).
    packed: BertModel on the packed layout (docs/model.md), its last layer only at the masked
    positions and [CLS], which must be real tokens: the same outputs up to rounding, no trace.
    keep_caches=False: forward only (no backward possible), as inference.
    mlm_logits: make the (M, V) logits whole and return them (default: on the padded layout, the
    reference); otherwise the decoder and its cross-entropy run fused, a block of rows at a time
    (layers/mlm_head.py), as the training step and inference do.
    """
    input_ids, token_type_ids, attention_mask = check_inputs(config, input_ids, token_type_ids, attention_mask)
    B, T = input_ids.shape
    mlm_positions, mlm_labels, nsp_labels = check_labels(config, B, T, mlm_positions, mlm_labels, nsp_labels)
    if POOLER_WEIGHT not in params:
        require_pooler(None, "next-sentence prediction")
    layout = make_layout(params, attention_mask, packed, read=mlm_positions)
    (h, pooled), bert = bert_model_forward(layout, params, config, input_ids, token_type_ids, rng, trace,
                                           keep_caches)                                     # (R, H), (B, H)
    logits = not packed if mlm_logits is None else mlm_logits
    out, heads = pretraining_heads_forward(h, layout.index(mlm_positions), pooled, params, config, mlm_labels,
                                           nsp_labels, bert.trace, logits, keep_caches)
    return out, PretrainingCache(bert, *heads)


def pretraining_heads_forward(h, mlm_positions, pooled, params, config, mlm_labels, nsp_labels, trace=NO_TRACE,
                              mlm_logits=True, grad=True):
    """The MLM head at mlm_positions (rows of h (R, H)) and the NSP head on pooled, and
    their losses -> (outputs dict, (mlm_head, nsp_head, mlm_loss, nsp_loss) caches). mlm_logits:
    the (M, V) logits whole, else the decoder and its loss fused (grad=False: no gradient made)."""
    scope = trace.scope("cls.predictions")
    extra = {}
    if mlm_logits:
        extra["mlm_logits"], mlm_cache = mlm_head_forward(h, mlm_positions, params, config, scope)   # (M, V)
        mlm_loss, mlm_ce = backend.cross_entropy_forward(extra["mlm_logits"], mlm_labels)
        predictions = extra["mlm_logits"].argmax(axis=-1)                                       # (M,)
    else:
        (mlm_loss, predictions), mlm_cache = mlm_loss_forward(h, mlm_positions, params, config, mlm_labels, grad,
                                                              scope)
        mlm_ce = None
    nsp_logits, nsp_cache = nsp_head_forward(pooled, params, trace.scope("cls.seq_relationship"))             # (B, 2)
    nsp_loss, nsp_ce = backend.cross_entropy_forward(nsp_logits, nsp_labels)
    for name, value in (("mlm_loss", mlm_loss), ("nsp_loss", nsp_loss), ("loss", mlm_loss + nsp_loss)):
        trace.record(name, value)
    out = dict(loss=mlm_loss + nsp_loss, mlm_loss=mlm_loss, nsp_loss=nsp_loss, mlm_predictions=predictions,
               **extra, nsp_logits=nsp_logits, mlm_labels=mlm_labels, nsp_labels=nsp_labels)
    return out, (mlm_cache, nsp_cache, mlm_ce, nsp_ce)


def pretraining_backward(cache: PretrainingCache, dloss=1.0):
    """Gradients of the pretraining loss for every parameter (same keys as the params), either layout."""
    dh, dpooled, head_grads = pretraining_heads_backward(cache, dloss)                 # (R, H), (B, H)
    return with_head_grads(bert_model_backward(dh, dpooled, cache.bert), head_grads)


def pretraining_heads_backward(cache: PretrainingCache, dloss=1.0):
    """-> (dh, the MLM head's gradient at h's rows; dpooled (B, H); the heads' grads)."""
    trace = cache.bert.trace
    if cache.mlm_loss is None:                                                        # fused: no logits kept
        dh, g_mlm = mlm_loss_backward(dloss, cache.mlm_head, trace.scope("cls.predictions"))       # (R, H)
    else:
        dmlm_logits = backend.cross_entropy_backward(dloss, cache.mlm_loss)          # (M, V)
        dh, g_mlm = mlm_head_backward(dmlm_logits, cache.mlm_head, trace.scope("cls.predictions"))  # (R, H)
    dnsp_logits = backend.cross_entropy_backward(dloss, cache.nsp_loss)              # (B, 2)
    dpooled, g_nsp = nsp_head_backward(dnsp_logits, cache.nsp_head, trace.scope("cls.seq_relationship"))  # (B, H)
    return dh, dpooled, (g_mlm, g_nsp)


def with_head_grads(grads, head_grads):
    """The encoder's grads with the heads' added; the tied decoder's share goes to the word embeddings."""
    g_mlm, g_nsp = head_grads
    grads[WORD_EMBEDDINGS] += g_mlm.pop(WORD_EMBEDDINGS)    # tied decoder: both uses add up
    grads.update(g_mlm)
    grads.update(g_nsp)
    return grads
