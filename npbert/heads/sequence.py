"""BertForSequenceClassification: one label (or one number) per sequence or pair
(docs/layers/sequence_classification.md).

    logits = classifier(dropout(pooled))           pooled: (B, F) [CLS] -> logits: (B, K)
    loss   = CE(logits, labels), or MSE(logits[:, 0], labels) when K == 1 (regression)

Examples: {"text", "text_pair" (or None), "label"}; accuracy (F1, MCC, ...) or, for regression,
Spearman and Pearson correlations.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert import metrics as m
from npbert.errors import CheckpointError, DataError, InputError
from npbert.heads.head import (CLS, Encoded, Head, classifier_dropout, int_labels, label_fields, most_common,
                               top_probability)
from npbert.layers.classifier import W, ClassifierCache, classifier_backward, classifier_forward
from npbert.ops import CrossEntropyCache, MseCache, mse_backward, mse_forward
from npbert.tasks.encoding import encode_sequences


class SequenceHeadCache(NamedTuple):
    classifier: ClassifierCache
    loss: CrossEntropyCache | MseCache | None    # MSE when num_labels == 1 (regression); None without labels
    num_labels: int


def sequence_head_forward(x, params, config, targets, rng, trace):
    """x: (B, F) -> ({"logits": (B, K), "loss", "labels"}, cache): dropout + classifier, then
    cross-entropy, or MSE(logits[:, 0], labels) when K == 1 (regression)."""
    logits, head_cache = classifier_forward(x, params, classifier_dropout(config), rng, trace)   # (B, K)
    B, K = logits.shape
    labels, loss, loss_cache = targets.get("labels"), None, None
    if labels is not None:
        if K == 1:
            labels = _float_labels(labels, B)
            loss, loss_cache = mse_forward(logits[:, 0], labels)
        else:
            labels = int_labels("labels", labels, (B,), K, "num_labels")
            loss, loss_cache = backend.cross_entropy_forward(logits, labels)
        trace.record("loss", loss)
    return dict(logits=logits, loss=loss, labels=labels), SequenceHeadCache(head_cache, loss_cache, K)


def sequence_head_backward(dloss, cache: SequenceHeadCache, trace):
    # -> dx: (B, F), the classifier's grads
    if cache.num_labels == 1:
        dlogits = mse_backward(dloss, cache.loss)[:, None]                         # (B, 1)
    else:
        dlogits = backend.cross_entropy_backward(dloss, cache.loss)                # (B, K)
    return classifier_backward(dlogits, cache.classifier, trace)                   # (B, F)


def _float_labels(labels, B):
    labels = np.asarray(labels)
    if labels.shape != (B,) or not (np.issubdtype(labels.dtype, np.number) and np.isfinite(labels).all()):
        raise InputError(f"regression labels must be {B} finite numbers, got shape {labels.shape} dtype {labels.dtype}")
    return labels


# --- around the model --------------------------------------------------------------------------------

def encode(task, examples, tokenizer, max_seq_length, labels, options=None) -> Encoded:
    return Encoded(encode_sequences(examples, tokenizer, max_seq_length, labels, task.regression))


def decode(task, examples, encoded, outputs, labels, options=None) -> list:
    """logits (K,) per example -> a label name, or a number (regression)."""
    if task.regression:
        return [float(o[0]) for o in outputs]
    return [labels[int(np.argmax(o))] for o in outputs]


def gold(task, examples) -> list:
    return [float(ex["label"]) if task.regression else str(ex["label"]) for ex in examples]


def score(task, examples, predictions, labels=None) -> dict:
    y = gold(task, examples)
    if task.regression:
        return dict(spearman=m.spearman(predictions, y), pearson=m.pearson(predictions, y))
    out = dict(accuracy=m.accuracy(y, predictions))
    if "f1" in task.metrics:                       # binary F1 of the positive class (labels[1]), as GLUE
        out["f1"] = m.f1(y, predictions, positive=labels[1])
    if "macro_f1" in task.metrics:
        out["macro_f1"] = m.macro_f1(y, predictions)
    if "mcc" in task.metrics:
        out["mcc"] = m.matthews_corrcoef(y, predictions)
    return out


def baseline(task, train_examples, dev_examples) -> list:
    """The most frequent training label; for regression the mean (whose correlations are then 0)."""
    answers = gold(task, train_examples)
    guess = float(np.mean(answers)) if task.regression else most_common(answers)
    return [guess] * len(dev_examples)


def label_names(task, train_examples):
    """The training examples' labels, numbers in numeric order; None for regression (one output)."""
    if task.regression:
        return None
    seen = {str(ex["label"]) for ex in train_examples if ex.get("label") is not None}
    if not seen:
        raise DataError(f"{train_examples[0]['where']}: the training examples have no labels")
    try:
        return sorted(seen, key=lambda s: (int(s), s))   # "2" before "10"; equal numbers ("1", "01") by text
    except ValueError:                                   # not all integers
        return sorted(seen)


def from_line(fields, line, n, where):
    if len(fields) > 2:
        return None
    return dict(text=fields[0], text_pair=fields[1] if len(fields) == 2 else None, where=where)


def format_prediction(task, example, output, prediction) -> str:
    return f"{prediction:.4f}" if task.regression else f"{prediction}\t{top_probability(output):.3f}"


def config_fields(names) -> dict:
    problem = "regression" if len(names) == 1 else "single_label_classification"
    return dict(label_fields(names), problem_type=problem)


def check_config(config, names, task, where) -> None:
    """A regression model for a regression task, a classifier for a classification task."""
    if names is None:
        return
    problem = config.extra.get("problem_type") or ("regression" if len(names) == 1 else "classification")
    if (problem == "regression") != task.regression:
        raise CheckpointError(f"{where} is a {problem.replace('_', ' ')} model ({len(names)} output(s)); "
                              f"task {task.name} is {'regression' if task.regression else 'classification'}")


HEAD = Head(
    kind="sequence_classification", architecture="BertForSequenceClassification", weight=W, reads=CLS,
    choices=False, targets=("labels",), num_outputs=lambda num_labels: num_labels,
    forward=sequence_head_forward, backward=sequence_head_backward, output_of=lambda out, b, T: out["logits"][b],
    encode=encode, decode=decode, gold_key="label", gold=gold, score=score, baseline=baseline,
    label_names=label_names, line_fields="text[<TAB>text_pair]", from_line=from_line, format=format_prediction,
    labelled=True, config_fields=config_fields, check_config=check_config)
