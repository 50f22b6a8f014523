"""A fine-tuning model: a head (npbert/heads/) on what the encoder gives it, written out like
pretraining_forward/backward in model.py, for every head alike:

    fine-tuned (BertFor<head>)      BertModel -> pooled (head.reads CLS) or sequence output -> head
                                    (on the padded layout, or the packed one: the training step's)
    feature-based                   a frozen encoder's features (npbert/heads/feature_based.py) -> head

A head with choices takes input_ids (B, C, T): the B*C sequences run through the encoder as one
batch and the head reads x (B, C, F). Parameters and gradients are keyed by Hugging Face's names
for the same classes, so checkpoints map one-to-one. The feature-based model has no pooler (it
was trained on the last layer's [CLS] only): a head on a sentence reads the chosen features at
[CLS] directly, and the backward ends at the features: no encoder gradient.

    (outputs, cache) = task_model_forward(head, params, config, input_ids, token_type_ids,
                                          attention_mask, rng=None, trace=None, **targets)
    grads            = task_model_backward(dloss, cache)

outputs["loss"] is None without targets. model_of(config, head) -> (forward, backward) for that
head on what config describes (fine-tuned, or the feature-based choice it records).
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from npbert.config import BertConfig
from npbert.errors import InputError
from npbert.heads.feature_based import FeaturesCache, feature_choice, features_backward, features_forward
from npbert.heads.head import CLS, Head
from npbert.model import BertCache, bert_model_backward, bert_model_forward, make_layout, require_pooler
from npbert.model_inputs import check_inputs
from npbert.ops import IGNORE_INDEX


class TaskModelCache(NamedTuple):
    head: Head
    base: BertCache | FeaturesCache      # the encoder's (fine-tuned) or the frozen features'
    head_cache: tuple                    # the head's own cache record
    x_shape: tuple                       # what the encoder gave the head, before the head's view of it


def task_model_forward(head: Head, params, config, input_ids, token_type_ids=None, attention_mask=None,
                       rng=None, trace=None, packed=False, keep_caches=True, **targets):
    """-> (the head's outputs, cache). targets: the batch keys of head.targets (labels, positions).
    packed: BertModel on the packed layout (the real tokens only), its last layer only at [CLS] for
    a head on [CLS]; the same outputs and gradients up to rounding (a head on every token: zeros
    at padding, which its targets must not score). Not for a traced call (the trace is the padded
    reference's) nor a head whose loss reads padding (head.reads_padding: QA), which run the
    padded encoder. keep_caches=False (packed): forward only, as inference."""
    check_targets(head, targets)
    lead = None
    if head.choices:
        input_ids, token_type_ids, attention_mask, lead = flatten_choices(input_ids, token_type_ids, attention_mask)
    at_cls = head.reads == CLS
    if feature_choice(config) is None:
        input_ids, token_type_ids, attention_mask = check_inputs(config, input_ids, token_type_ids, attention_mask)
        packed = packed and trace is None and not head.reads_padding
        if packed and not at_cls:
            check_unscored_padding(targets, attention_mask)
        layout = make_layout(params, attention_mask, packed, read=() if at_cls else None)
        (h, pooled), base = bert_model_forward(layout, params, config, input_ids, token_type_ids, rng, trace,
                                               keep_caches)               # (R, H): [CLS] or every row
        x = require_pooler(pooled, head.architecture) if at_cls else layout.batched(h)  # (N, H) or (N, T, H)
    else:
        x, base = features_forward(params, config, input_ids, token_type_ids, attention_mask, at_cls,
                                   trace)                                               # (N, F) or (N, T, F)
    x_shape = x.shape
    if lead is not None:
        x = x.reshape(*lead, x.shape[-1])                                                # (B, C, F)
    out, head_cache = head.forward(x, params, config, targets, rng, base.trace)
    return out, TaskModelCache(head, base, head_cache, x_shape)


def task_model_backward(dloss, cache: TaskModelCache) -> dict:
    """-> grads of every trained parameter: the encoder's and the head's (fine-tuned), or the
    head's and the scalar mix's (feature-based)."""
    dx, g_head = cache.head.backward(dloss, cache.head_cache, cache.base.trace)
    dx = dx.reshape(cache.x_shape)                                                       # (N, F) or (N, T, F)
    if isinstance(cache.base, FeaturesCache):
        g_head.update(features_backward(dx, cache.base))
        return g_head
    if cache.head.reads == CLS:
        grads = bert_model_backward(None, dx, cache.base)
    else:
        grads = bert_model_backward(cache.base.layout.rows_of(dx), None, cache.base)     # (N, H)
    grads.update(g_head)
    return grads


def check_targets(head: Head, targets: dict) -> None:
    unknown = set(targets) - set(head.targets)
    if unknown:
        raise InputError(f"{head.architecture} takes {', '.join(head.targets)} as targets, not {', '.join(unknown)}")


def check_unscored_padding(targets, attention_mask) -> None:
    """A per-token target (B, T) scores no padded position: the packed encoder does not compute them."""
    if attention_mask is None:
        return
    padded = np.asarray(attention_mask) == 0                                           # (B, T)
    for name, target in targets.items():
        scored = np.asarray(target) != IGNORE_INDEX
        if scored.shape == padded.shape and (scored & padded).any():
            b, t = (int(i) for i in np.argwhere(scored & padded)[0])
            raise InputError(f"{name}[{b}, {t}] scores a padded position (attention_mask 0): give it "
                             f"{IGNORE_INDEX}; the packed encoder does not compute padding")


def model_of(config: BertConfig, head: Head) -> tuple:
    """(forward, backward) of the model config describes, for head: BertFor<head>
    (packed where the head allows), or, when it records a feature-based choice, the head on the
    frozen encoder's features."""
    return functools.partial(task_model_forward, head, packed=True), task_model_backward


def flatten_choices(input_ids, token_type_ids, attention_mask):
    """(B, C, T) inputs -> the B*C choices as sequences (B*C, T) each, and (B, C)."""
    input_ids = np.asarray(input_ids)
    if input_ids.ndim != 3:
        raise InputError("multiple choice input_ids must be 3-D (batch, choices, seq_len), got shape "
                         f"{input_ids.shape}")
    B, C, T = input_ids.shape

    def flat(a):
        return None if a is None else _same_shape(a, input_ids.shape).reshape(B * C, T)       # (B*C, T)
    return flat(input_ids), flat(token_type_ids), flat(attention_mask), (B, C)


def _same_shape(a, shape):
    a = np.asarray(a)
    if a.shape != shape:
        raise InputError(f"token_type_ids/attention_mask have shape {a.shape}, expected {shape} to match input_ids")
    return a
