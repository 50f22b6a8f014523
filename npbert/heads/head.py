"""What a head is: the record each head module fills in (npbert/heads/sequence.py, token.py,
span.py, choice.py), and the checks of targets they share. docs/heads.md: how to add one.

A head is a layer pair on what the encoder gives it, with its loss,

    (out, cache) = head.forward(x, params, config, targets, rng, trace)   x: (B, F), (B, T, F) or (B, C, F)
    (dx, grads)  = head.backward(dloss, cache, trace)

plus everything around it that is that head's own: its Hugging Face class and parameter names,
what it reads (the [CLS] position or every token, one sequence or C per example), how examples
become features and outputs become predictions, the gold answers, the metrics and the baseline,
the plain-text line `npbert predict` reads and the line it prints. npbert/task_model.py runs any
head over BertModel or over a frozen encoder's features; nothing outside a head's module asks
which head it is.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from npbert.errors import InputError
from npbert.model import IGNORE_INDEX, _check_range
from npbert.ops import softmax_forward

CLS, TOKENS = "cls", "tokens"    # what a head reads: the [CLS] position (pooled), or every token


@dataclass(frozen=True)
class Head:
    kind: str                    # the name tasks give it (tasks/registry.py's Task.kind)
    architecture: str            # Hugging Face's class, saved in config.json's "architectures"
    weight: str                  # its linear layer: <weight>.weight (K, F) and <weight>.bias (K,)
    reads: str                   # CLS or TOKENS
    choices: bool                # inputs (B, C, T): C sequences per example, read as x (B, C, F)
    targets: tuple               # the batch keys its loss reads ("labels", ...)
    num_outputs: Callable        # num_labels -> K, the rows of <weight>.weight
    forward: Callable            # (x, params, config, targets: dict, rng, trace) -> (outputs, cache)
    backward: Callable           # (dloss, cache, trace) -> (dx, grads by parameter name)
    output_of: Callable          # (outputs, b, T) -> row b's outputs without padding (T real tokens)
    encode: Callable             # (task, examples, tokenizer, max_seq_length, labels, options) -> Encoded
    decode: Callable             # (task, examples, encoded, outputs, labels, options) -> predictions
    gold_key: str                # the example field that holds the answer ("label", "tags", ...)
    gold: Callable               # (task, examples) -> the gold answers, in the predictions' form
    score: Callable              # (task, examples, predictions, labels) -> metrics (task.metrics first)
    baseline: Callable           # (task, train_examples, dev_examples) -> the majority guess for dev
    label_names: Callable        # (task, train_examples) -> names of the outputs, or None
    line_fields: str             # what one line of `npbert predict`'s input holds
    from_line: Callable          # (fields, line, n, where) -> an example, or None if the fields do not fit
    format: Callable             # (task, example, output, prediction) -> the line `npbert predict` prints
    labelled: bool = False       # its outputs have names, saved as config.json's id2label
    reads_padding: bool = False  # its outputs and loss read padded positions too (QA's softmax over all T)
    config_fields: Callable = lambda names: {}           # names -> config.json fields (HF's) for them
    check_config: Callable = lambda config, names, task, where: None   # a saved head fits task, or raise


@dataclass
class Encoded:
    features: list                                 # one dict of lists per model input (tasks/encoding.py)
    contexts: list = field(default_factory=list)   # QA: each example's context token offsets


# --- targets: a clear message instead of an IndexError deep inside ---------------------------------------

def int_labels(name, labels, shape, limit, limit_name):
    labels = np.asarray(labels)
    if labels.shape != tuple(shape):
        raise InputError(f"{name} has shape {labels.shape}, expected {tuple(shape)}")
    if not np.issubdtype(labels.dtype, np.integer):
        raise InputError(f"{name} must be integer class ids, got dtype {labels.dtype}")
    _check_range(name, labels, limit, limit_name, allow=IGNORE_INDEX)
    return labels


def classifier_dropout(config) -> float:
    """HF: config.classifier_dropout if set, else hidden_dropout_prob."""
    p_drop = config.extra.get("classifier_dropout")
    return config.hidden_dropout_prob if p_drop is None else float(p_drop)


def label_fields(names) -> dict:
    """HF's config.json fields for a classifier's label names, in id order."""
    names = [str(n) for n in names]
    return dict(num_labels=len(names), id2label={str(i): n for i, n in enumerate(names)},
                label2id={n: i for i, n in enumerate(names)})


def top_probability(logits) -> float:
    """The softmax probability of the highest of one example's logits (K,), in float64."""
    return float(softmax_forward(np.asarray(logits, np.float64))[0].max())


def most_common(values):
    """The most frequent value (the first seen among equals: Counter's order)."""
    return Counter(values).most_common(1)[0][0]
