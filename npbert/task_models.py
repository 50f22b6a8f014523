"""The fine-tuning models: BertModel + a task head + its loss, each a forward/backward pair
written out like pretraining_forward/backward in model.py. Parameters and gradients are keyed
by Hugging Face's names for the same classes, so checkpoints map one-to-one:

    sequence_classification   BertForSequenceClassification  pooled -> dropout -> classifier (K, H)
                              cross-entropy, or MSE when num_labels == 1 (regression)
    token_classification      BertForTokenClassification     sequence -> dropout -> classifier (K, H)
                              cross-entropy over tokens, IGNORE_INDEX (-100) where no label
    question_answering        BertForQuestionAnswering       sequence -> qa_outputs (2, H)
                              mean of the start and end cross-entropies
    multiple_choice           BertForMultipleChoice          (B, C, T) -> (B*C, T) -> pooled
                              -> dropout -> classifier (1, H) -> (B, C); cross-entropy over choices

Every forward is f(params, config, input_ids, token_type_ids, attention_mask, <labels>, rng)
-> (outputs dict, cache); outputs["loss"] is None without labels. Every backward is
f(cache, dloss=1.0) -> grads for every bert.* and head parameter.

FEATURE_MODELS are the feature-based twins (npbert/feature_based.py): the same heads on a frozen
encoder's features (at [CLS] where the model above reads the pooled output), their backward
giving the head's (and the scalar mix's) grads only. model_of(config, kind) picks by config.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.config import BertConfig
from npbert.errors import CheckpointError, InputError
from npbert.feature_based import (FIELD, FINE_TUNE, FeaturesCache, feature_choice, feature_width, features_backward,
                                  features_forward, mix_shapes, with_features)
from npbert.layers.classifier import ClassifierCache, classifier_backward, classifier_forward
from npbert.layers.scalar_mix import GAMMA
from npbert.layers.scalar_mix import W as MIX_W
from npbert.layers.question_answering import (SpanLossCache, qa_head_backward, qa_head_forward, span_loss_backward,
                                              span_loss_forward)
from npbert.model import (IGNORE_INDEX, BertCache, _check_range, bert_backward, bert_forward, require_pooler,
                          truncated_normal)
from npbert.ops import CrossEntropyCache, LinearCache, MseCache, mse_backward, mse_forward

KINDS = ("sequence_classification", "token_classification", "question_answering", "multiple_choice")
ARCHITECTURES = dict(sequence_classification="BertForSequenceClassification",
                     token_classification="BertForTokenClassification",
                     question_answering="BertForQuestionAnswering", multiple_choice="BertForMultipleChoice")
# config.json fields that name a task head (HF's names); a pretraining config has none of them
HEAD_FIELDS = ("architectures", "num_labels", "id2label", "label2id", "problem_type", FIELD)
HEAD_NAME = dict(sequence_classification="classifier", token_classification="classifier",
                 question_answering="qa_outputs", multiple_choice="classifier")


# --- head parameters -------------------------------------------------------------------------------

def head_shapes(config: BertConfig, kind: str, num_labels: int = 2) -> dict:
    """name -> shape of the head's parameters; QA has 2 outputs (start, end), multiple choice 1.
    A feature-based model's head reads its features (feature_width: 4H when four hidden states
    are concatenated) and a weighted choice adds the scalar mix (npbert/feature_based.py)."""
    check_kind(kind)
    K = {"question_answering": 2, "multiple_choice": 1}.get(kind, num_labels)
    W = HEAD_NAME[kind]
    return {W + ".weight": (K, feature_width(config)), W + ".bias": (K,), **mix_shapes(config)}


def init_head(config: BertConfig, kind: str, num_labels: int, rng, dtype=np.float32) -> dict:
    """BERT's initialisation for a new head: weight ~ truncated normal(0, initializer_range), bias 0;
    a scalar mix starts as the plain mean: weights 0, gamma 1."""
    return {name: (truncated_normal(rng, shape, config.initializer_range) if len(shape) == 2
                   else np.ones(shape) if name == GAMMA else np.zeros(shape)).astype(dtype)
            for name, shape in head_shapes(config, kind, num_labels).items()}


def check_head(params, config: BertConfig, kind: str, where) -> int:
    """The head's parameters are present and fit the model's hidden size (a feature-based model's:
    its features' width, and the scalar mix exactly when its choice has one); returns num_labels."""
    feature_choice(config, where)                        # a choice it records is known and fits its layers
    W, F = HEAD_NAME[kind], feature_width(config)
    if W + ".weight" not in params or W + ".bias" not in params:
        raise CheckpointError(f"{where} has no {W}.weight/{W}.bias: it is not a fine-tuned "
                              f"{ARCHITECTURES[kind]} checkpoint")
    w, b = params[W + ".weight"], params[W + ".bias"]
    if w.ndim != 2 or w.shape[1] != F or b.shape != (w.shape[0],):
        width = f"hidden_size {F}" if F == config.hidden_size else \
            f"the width {F} of its features ({FIELD} {config.extra[FIELD]})"
        raise CheckpointError(f"{where}: {W}.weight has shape {w.shape} and {W}.bias {b.shape}, which do not "
                              f"fit {width} (expected (num_labels, {F}))")
    expected = head_shapes(config, kind, w.shape[0])
    if w.shape != expected[W + ".weight"]:
        raise CheckpointError(f"{where}: {W}.weight has shape {w.shape}, {ARCHITECTURES[kind]} needs "
                              f"{expected[W + '.weight']}")
    mix = {n: tuple(np.shape(params[n])) if n in params else None for n in (MIX_W, GAMMA)}
    wanted = {n: expected.get(n) for n in (MIX_W, GAMMA)}
    if mix != wanted:
        choice = config.extra.get(FIELD, FINE_TUNE)
        raise CheckpointError(f"{where}: its scalar mix ({_shapes_text(mix)}) does not fit {FIELD} {choice} "
                              f"(which needs {_shapes_text(wanted)})")
    return int(w.shape[0])


def _shapes_text(shapes: dict) -> str:
    found = [f"{n} {s}" for n, s in shapes.items() if s is not None]
    return ", ".join(found) if found else "none"


def check_head_fits_task(config: BertConfig, task, where) -> None:
    """A fine-tuned checkpoint's config.json fits task (a tasks.registry.Task): the same head
    (architectures), regression or classification alike, and for a task that fixes its labels
    the same label names (in any order: the checkpoint's order is the one used), and a
    feature-based choice npbert knows that fits its layers. A config that names no head is left
    to check_head, which looks at the weights."""
    feature_choice(config, where)
    saved, wanted = config.extra.get("architectures") or [], ARCHITECTURES[task.kind]
    if saved and wanted not in saved:
        hint = "" if set(saved) & set(ARCHITECTURES.values()) else \
            f" (it has no task head: fine-tune it first, npbert finetune --model {where} --task {task.name})"
        raise CheckpointError(f"{where} is a {'/'.join(saved)} checkpoint{hint}; task {task.name} needs a {wanted}")
    names = label_names_of(config)
    if task.kind == "sequence_classification" and names is not None:
        problem = config.extra.get("problem_type") or ("regression" if len(names) == 1 else "classification")
        if (problem == "regression") != task.regression:
            raise CheckpointError(f"{where} is a {problem.replace('_', ' ')} model ({len(names)} output(s)); "
                                  f"task {task.name} is {'regression' if task.regression else 'classification'}")
    if task.labels is not None and names is not None and sorted(names) != sorted(task.labels):
        raise CheckpointError(f"{where} was fine-tuned with the labels {', '.join(names)}; task {task.name} has "
                              f"the labels {', '.join(task.labels)}")


def check_kind(kind):
    if kind not in KINDS:
        raise InputError(f"unknown head {kind!r}; choose one of {', '.join(KINDS)}")


def classifier_dropout(config: BertConfig) -> float:
    """HF: config.classifier_dropout if set, else hidden_dropout_prob."""
    p = config.extra.get("classifier_dropout")
    return config.hidden_dropout_prob if p is None else float(p)


# --- the Hugging Face config fields of a fine-tuned model ---------------------------------------------

def finetuned_config(config: BertConfig, kind: str, label_names=None, features=FINE_TUNE) -> BertConfig:
    """A copy of config whose extra fields say, in HF's names, which head the weights hold:
    architectures, and for the classifiers num_labels, id2label, label2id (and problem_type);
    and in npbert's own field, the features a feature-based head reads (npbert/feature_based.py)."""
    check_kind(kind)
    extra = {k: v for k, v in config.extra.items() if k not in HEAD_FIELDS}
    extra["architectures"] = [ARCHITECTURES[kind]]
    if label_names is not None and kind in ("sequence_classification", "token_classification"):
        names = [str(n) for n in label_names]
        extra.update(num_labels=len(names), id2label={str(i): n for i, n in enumerate(names)},
                     label2id={n: i for i, n in enumerate(names)})
        if kind == "sequence_classification":
            extra["problem_type"] = "regression" if len(names) == 1 else "single_label_classification"
    return with_features(dataclasses.replace(config, extra=extra), features)


def pretraining_config(config: BertConfig) -> BertConfig:
    """A copy of config without a task head's fields, so that it is saved as BertForPreTraining."""
    return dataclasses.replace(config, extra={k: v for k, v in config.extra.items() if k not in HEAD_FIELDS})


def label_names_of(config: BertConfig):
    """The label names saved by finetuned_config (id order), or None."""
    id2label = config.extra.get("id2label")
    if not id2label:
        return None
    return [id2label[str(i)] if str(i) in id2label else id2label[i] for i in range(len(id2label))]


# --- the heads on what they read, with their losses --------------------------------------------------
# Each takes the encoder output it reads (the BertFor* models below: the pooled [CLS] or the
# sequence output; the feature-based models of npbert/feature_based.py: a frozen encoder's
# features) and returns (outputs, cache); its backward returns (d input, the head's grads).

class SequenceHeadCache(NamedTuple):
    classifier: ClassifierCache
    loss: CrossEntropyCache | MseCache | None    # MSE when num_labels == 1 (regression); None without labels
    num_labels: int


def sequence_head_forward(x, params, config, labels, rng, trace):
    """x: (B, F) -> ({"logits": (B, K), "loss", "labels"}, cache): dropout + classifier, then
    cross-entropy, or MSE(logits[:, 0], labels) when K == 1 (regression)."""
    logits, head_cache = classifier_forward(x, params, classifier_dropout(config), rng, trace)   # (B, K)
    B, K = logits.shape
    loss = loss_cache = None
    if labels is not None:
        if K == 1:
            labels = _float_labels(labels, B)
            loss, loss_cache = mse_forward(logits[:, 0], labels)
        else:
            labels = _int_labels("labels", labels, (B,), K, "num_labels")
            loss, loss_cache = backend.cross_entropy_forward(logits, labels)
        trace.record("loss", loss)
    return dict(logits=logits, loss=loss, labels=labels), SequenceHeadCache(head_cache, loss_cache, K)


def sequence_head_backward(cache: SequenceHeadCache, dloss, trace):
    # -> dx: (B, F), the classifier's grads
    if cache.num_labels == 1:
        dlogits = mse_backward(dloss, cache.loss)[:, None]                         # (B, 1)
    else:
        dlogits = backend.cross_entropy_backward(dloss, cache.loss)                # (B, K)
    return classifier_backward(dlogits, cache.classifier, trace)                   # (B, F)


class TokenHeadCache(NamedTuple):
    classifier: ClassifierCache
    loss: CrossEntropyCache | None
    logits_shape: tuple          # (B, T, K)


def token_head_forward(x, params, config, labels, rng, trace):
    """x: (B, T, F) -> ({"logits": (B, T, K), "loss", "labels"}, cache); labels (B, T),
    IGNORE_INDEX where not scored (padding, special tokens, every WordPiece of a word but the first)."""
    logits, head_cache = classifier_forward(x, params, classifier_dropout(config), rng, trace)  # (B, T, K)
    B, T, K = logits.shape
    loss = loss_cache = None
    if labels is not None:
        labels = _int_labels("labels", labels, (B, T), K, "num_labels")
        loss, loss_cache = backend.cross_entropy_forward(logits.reshape(B * T, K), labels.reshape(-1))
        trace.record("loss", loss)
    return dict(logits=logits, loss=loss, labels=labels), TokenHeadCache(head_cache, loss_cache, logits.shape)


def token_head_backward(cache: TokenHeadCache, dloss, trace):
    # -> dx: (B, T, F), the classifier's grads
    dlogits = backend.cross_entropy_backward(dloss, cache.loss).reshape(cache.logits_shape)   # (B, T, K)
    return classifier_backward(dlogits, cache.classifier, trace)                              # (B, T, F)


class SpanHeadCache(NamedTuple):
    qa_outputs: LinearCache
    loss: SpanLossCache | None


def span_head_forward(x, params, start_positions, end_positions, trace):
    """x: (B, T, F) -> ({"start_logits": (B, T), "end_logits": (B, T), "loss", positions}, cache);
    positions (B,) token indices (see layers/question_answering.py for positions outside the window)."""
    logits, head_cache = qa_head_forward(x, params, trace)                          # (B, T, 2)
    B = logits.shape[0]
    loss = loss_cache = None
    if start_positions is not None or end_positions is not None:
        start_positions = _positions("start_positions", start_positions, B)
        end_positions = _positions("end_positions", end_positions, B)
        loss, loss_cache = span_loss_forward(logits, start_positions, end_positions)
        trace.record("loss", loss)
    out = dict(start_logits=logits[..., 0], end_logits=logits[..., 1], loss=loss,
               start_positions=start_positions, end_positions=end_positions)
    return out, SpanHeadCache(head_cache, loss_cache)


def span_head_backward(cache: SpanHeadCache, dloss, trace):
    # -> dx: (B, T, F), qa_outputs' grads
    dlogits = span_loss_backward(dloss, cache.loss)                                 # (B, T, 2)
    return qa_head_backward(dlogits, cache.qa_outputs, trace)                       # (B, T, F)


class ChoiceHeadCache(NamedTuple):
    classifier: ClassifierCache
    loss: CrossEntropyCache | None


def choice_head_forward(x, num_choices, params, config, labels, rng, trace):
    """x: (B*C, F), one row per choice -> ({"logits": (B, C), "loss", "labels"}, cache): a score
    per choice (dropout + classifier (1, F)), cross-entropy over the choices."""
    scores, head_cache = classifier_forward(x, params, classifier_dropout(config), rng, trace)   # (B*C, 1)
    logits = scores.reshape(-1, num_choices)                                                    # (B, C)
    trace.record("logits", logits)
    loss = loss_cache = None
    if labels is not None:
        labels = _int_labels("labels", labels, (logits.shape[0],), num_choices, "number of choices")
        loss, loss_cache = backend.cross_entropy_forward(logits, labels)
        trace.record("loss", loss)
    return dict(logits=logits, loss=loss, labels=labels), ChoiceHeadCache(head_cache, loss_cache)


def choice_head_backward(cache: ChoiceHeadCache, dloss, trace):
    # -> dx: (B*C, F), the classifier's grads
    dlogits = backend.cross_entropy_backward(dloss, cache.loss)                   # (B, C)
    trace.record_grad("logits", dlogits)
    return classifier_backward(dlogits.reshape(-1, 1), cache.classifier, trace)   # (B*C, F)


def flatten_choices(input_ids, token_type_ids, attention_mask):
    """(B, C, T) inputs -> the B*C choices as sequences (B*C, T) each, and C."""
    input_ids = np.asarray(input_ids)
    if input_ids.ndim != 3:
        raise InputError("multiple choice input_ids must be 3-D (batch, choices, seq_len), got shape "
                         f"{input_ids.shape}")
    B, C, T = input_ids.shape

    def flat(a):
        return None if a is None else _same_shape(a, input_ids.shape).reshape(B * C, T)       # (B*C, T)
    return flat(input_ids), flat(token_type_ids), flat(attention_mask), C


# --- the BertFor* models: BertModel + a head, trained end to end ---------------------------------------

class TaskModelCache(NamedTuple):
    bert: BertCache
    head: SequenceHeadCache | TokenHeadCache | SpanHeadCache | ChoiceHeadCache


def sequence_classification_forward(params, config, input_ids, token_type_ids=None, attention_mask=None,
                                    labels=None, rng=None, trace=None):
    """BertForSequenceClassification -> ({"logits": (B, K), "loss"}, cache). K == 1 is regression.
    trace: a npbert.trace.Trace, as for bert_forward (the head adds "classifier" and "loss")."""
    (h, pooled), bert_cache = bert_forward(params, config, input_ids, token_type_ids, attention_mask, rng, trace)
    pooled = require_pooler(pooled, "sequence classification")
    out, head_cache = sequence_head_forward(pooled, params, config, labels, rng, bert_cache.trace)  # logits (B, K)
    return out, TaskModelCache(bert_cache, head_cache)


def sequence_classification_backward(cache: TaskModelCache, dloss=1.0):
    dpooled, g_head = sequence_head_backward(cache.head, dloss, cache.bert.trace)   # (B, H)
    grads = bert_backward(None, dpooled, cache.bert)
    grads.update(g_head)
    return grads


def token_classification_forward(params, config, input_ids, token_type_ids=None, attention_mask=None,
                                 labels=None, rng=None, trace=None):
    """BertForTokenClassification -> ({"logits": (B, T, K), "loss"}, cache); labels (B, T)."""
    (h, pooled), bert_cache = bert_forward(params, config, input_ids, token_type_ids, attention_mask, rng, trace)
    out, head_cache = token_head_forward(h, params, config, labels, rng, bert_cache.trace)     # logits (B, T, K)
    return out, TaskModelCache(bert_cache, head_cache)


def token_classification_backward(cache: TaskModelCache, dloss=1.0):
    dh, g_head = token_head_backward(cache.head, dloss, cache.bert.trace)          # (B, T, H)
    grads = bert_backward(dh, None, cache.bert)
    grads.update(g_head)
    return grads


def question_answering_forward(params, config, input_ids, token_type_ids=None, attention_mask=None,
                               start_positions=None, end_positions=None, rng=None, trace=None):
    """BertForQuestionAnswering -> ({"start_logits": (B, T), "end_logits": (B, T), "loss"}, cache)."""
    (h, pooled), bert_cache = bert_forward(params, config, input_ids, token_type_ids, attention_mask, rng, trace)
    out, head_cache = span_head_forward(h, params, start_positions, end_positions, bert_cache.trace)
    return out, TaskModelCache(bert_cache, head_cache)


def question_answering_backward(cache: TaskModelCache, dloss=1.0):
    dh, g_head = span_head_backward(cache.head, dloss, cache.bert.trace)           # (B, T, H)
    grads = bert_backward(dh, None, cache.bert)
    grads.update(g_head)
    return grads


def multiple_choice_forward(params, config, input_ids, token_type_ids=None, attention_mask=None,
                            labels=None, rng=None, trace=None):
    """BertForMultipleChoice: input_ids (B, C, T), C choices per example, each a whole sequence
    -> ({"logits": (B, C), "loss"}, cache)."""
    input_ids, token_type_ids, attention_mask, C = flatten_choices(input_ids, token_type_ids, attention_mask)
    (h, pooled), bert_cache = bert_forward(params, config, input_ids, token_type_ids, attention_mask, rng,
                                           trace)                                            # pooled (B*C, H)
    pooled = require_pooler(pooled, "multiple choice")
    out, head_cache = choice_head_forward(pooled, C, params, config, labels, rng, bert_cache.trace)  # (B, C)
    return out, TaskModelCache(bert_cache, head_cache)


def multiple_choice_backward(cache: TaskModelCache, dloss=1.0):
    dpooled, g_head = choice_head_backward(cache.head, dloss, cache.bert.trace)    # (B*C, H)
    grads = bert_backward(None, dpooled, cache.bert)
    grads.update(g_head)
    return grads


MODELS = dict(sequence_classification=(sequence_classification_forward, sequence_classification_backward),
              token_classification=(token_classification_forward, token_classification_backward),
              question_answering=(question_answering_forward, question_answering_backward),
              multiple_choice=(multiple_choice_forward, multiple_choice_backward))

# --- the feature-based models: a frozen encoder's features + the same heads (npbert/feature_based.py) ---
# No pooler: it was trained on the last layer's [CLS] only, so the heads on a sentence read the
# chosen features at [CLS] directly. The backward ends at the features: no encoder gradient.

class FeatureModelCache(NamedTuple):
    features: FeaturesCache
    head: SequenceHeadCache | TokenHeadCache | SpanHeadCache | ChoiceHeadCache


def feature_based_sequence_classification_forward(params, config, input_ids, token_type_ids=None,
                                                  attention_mask=None, labels=None, rng=None, trace=None):
    """The [CLS] features -> sequence_head -> ({"logits": (B, K), "loss"}, cache)."""
    x, features_cache = features_forward(params, config, input_ids, token_type_ids, attention_mask, True,
                                         trace)                                                 # (B, F)
    out, head_cache = sequence_head_forward(x, params, config, labels, rng, features_cache.trace)
    return out, FeatureModelCache(features_cache, head_cache)


def feature_based_sequence_classification_backward(cache: FeatureModelCache, dloss=1.0):
    dx, grads = sequence_head_backward(cache.head, dloss, cache.features.trace)    # (B, F)
    grads.update(features_backward(dx, cache.features))
    return grads


def feature_based_token_classification_forward(params, config, input_ids, token_type_ids=None,
                                               attention_mask=None, labels=None, rng=None, trace=None):
    """Every token's features -> token_head -> ({"logits": (B, T, K), "loss"}, cache)."""
    x, features_cache = features_forward(params, config, input_ids, token_type_ids, attention_mask, False,
                                         trace)                                                 # (B, T, F)
    out, head_cache = token_head_forward(x, params, config, labels, rng, features_cache.trace)
    return out, FeatureModelCache(features_cache, head_cache)


def feature_based_token_classification_backward(cache: FeatureModelCache, dloss=1.0):
    dx, grads = token_head_backward(cache.head, dloss, cache.features.trace)       # (B, T, F)
    grads.update(features_backward(dx, cache.features))
    return grads


def feature_based_question_answering_forward(params, config, input_ids, token_type_ids=None, attention_mask=None,
                                             start_positions=None, end_positions=None, rng=None, trace=None):
    """Every token's features -> span_head -> ({"start_logits", "end_logits": (B, T), "loss"}, cache)."""
    x, features_cache = features_forward(params, config, input_ids, token_type_ids, attention_mask, False,
                                         trace)                                                 # (B, T, F)
    out, head_cache = span_head_forward(x, params, start_positions, end_positions, features_cache.trace)
    return out, FeatureModelCache(features_cache, head_cache)


def feature_based_question_answering_backward(cache: FeatureModelCache, dloss=1.0):
    dx, grads = span_head_backward(cache.head, dloss, cache.features.trace)        # (B, T, F)
    grads.update(features_backward(dx, cache.features))
    return grads


def feature_based_multiple_choice_forward(params, config, input_ids, token_type_ids=None, attention_mask=None,
                                          labels=None, rng=None, trace=None):
    """(B, C, T) -> each choice's [CLS] features (B*C, F) -> choice_head -> ({"logits": (B, C), "loss"}, cache)."""
    input_ids, token_type_ids, attention_mask, C = flatten_choices(input_ids, token_type_ids, attention_mask)
    x, features_cache = features_forward(params, config, input_ids, token_type_ids, attention_mask, True,
                                         trace)                                                 # (B*C, F)
    out, head_cache = choice_head_forward(x, C, params, config, labels, rng, features_cache.trace)
    return out, FeatureModelCache(features_cache, head_cache)


def feature_based_multiple_choice_backward(cache: FeatureModelCache, dloss=1.0):
    dx, grads = choice_head_backward(cache.head, dloss, cache.features.trace)      # (B*C, F)
    grads.update(features_backward(dx, cache.features))
    return grads


FEATURE_MODELS = dict(
    sequence_classification=(feature_based_sequence_classification_forward,
                             feature_based_sequence_classification_backward),
    token_classification=(feature_based_token_classification_forward, feature_based_token_classification_backward),
    question_answering=(feature_based_question_answering_forward, feature_based_question_answering_backward),
    multiple_choice=(feature_based_multiple_choice_forward, feature_based_multiple_choice_backward))


def model_of(config: BertConfig, kind: str) -> tuple:
    """(forward, backward) of the model config describes: BertFor<kind>, or, when it records a
    feature-based choice, the head on the frozen encoder's features."""
    check_kind(kind)
    return (MODELS if feature_choice(config) is None else FEATURE_MODELS)[kind]


# --- label checks: a clear message instead of an IndexError deep inside ---------------------------------

def _int_labels(name, labels, shape, limit, limit_name):
    labels = np.asarray(labels)
    if labels.shape != tuple(shape):
        raise InputError(f"{name} has shape {labels.shape}, expected {tuple(shape)}")
    if not np.issubdtype(labels.dtype, np.integer):
        raise InputError(f"{name} must be integer class ids, got dtype {labels.dtype}")
    _check_range(name, labels, limit, limit_name, allow=IGNORE_INDEX)
    return labels


def _float_labels(labels, B):
    labels = np.asarray(labels)
    if labels.shape != (B,) or not (np.issubdtype(labels.dtype, np.number) and np.isfinite(labels).all()):
        raise InputError(f"regression labels must be {B} finite numbers, got shape {labels.shape} dtype {labels.dtype}")
    return labels


def _positions(name, positions, B):
    if positions is None:
        raise InputError("question answering needs both start_positions and end_positions")
    positions = np.asarray(positions)
    if positions.shape != (B,) or not np.issubdtype(positions.dtype, np.integer):
        raise InputError(f"{name} must be {B} integer token indices, got shape {positions.shape} "
                         f"dtype {positions.dtype}")
    return positions


def _same_shape(a, shape):
    a = np.asarray(a)
    if a.shape != shape:
        raise InputError(f"token_type_ids/attention_mask have shape {a.shape}, expected {shape} to match input_ids")
    return a
