"""What a head is: the record each head module fills in (npbert/heads/sequence.py, token.py,
span.py, choice.py), and the checks of targets they share. docs/heads.md: how to add one.

A head is a layer pair on what the encoder gives it, with its loss, like Hugging Face's BertFor*
classes:

    (out, cache) = head.forward(x, params, config, targets, rng, trace)   x: (B, F), (B, T, F) or (B, C, F)
    (dx, grads)  = head.backward(dloss, cache, trace)

plus what the model around it needs to know: its Hugging Face class and parameter names, what
it reads (the [CLS] position or every token, one sequence or C per example), its targets, and
how one example's outputs are cut from a batch's. npbert/heads/task_model.py runs any head over
BertModel or over a frozen encoder's features; what a task's examples are (encoding, decoding,
metrics) is the task's format (npbert/tasks/formats.py), not the head's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from npbert.errors import InputError
from npbert.model_inputs import check_range
from npbert.ops import IGNORE_INDEX

CLS, TOKENS = "cls", "tokens"    # what a head reads: the [CLS] position (pooled), or every token


@dataclass(frozen=True)
class Head:
    name: str                    # its key in HEADS (npbert/heads/registry.py)
    architecture: str            # Hugging Face's class, saved in config.json's "architectures"
    weight: str                  # its linear layer: <weight>.weight (K, F) and <weight>.bias (K,)
    reads: str                   # CLS or TOKENS
    choices: bool                # inputs (B, C, T): C sequences per example, read as x (B, C, F)
    targets: tuple               # the batch keys its loss reads ("labels", ...)
    num_outputs: Callable        # num_labels -> K, the rows of <weight>.weight
    forward: Callable            # (x, params, config, targets: dict, rng, trace) -> (outputs, cache)
    backward: Callable           # (dloss, cache, trace) -> (dx, grads by parameter name)
    output_of: Callable          # (outputs, b, T) -> row b's outputs without padding (T real tokens)
    reads_padding: bool = False  # its loss reads padded positions too (QA's softmax over every position, as
                                 # HF's): the packed encoder, which computes none, cannot serve it
    config_fields: Callable = lambda names: {}           # output names -> config.json fields (HF's) for them
    regression: str | None = None  # the name of its one-output form when that is a regression (MSE), as
                                   # HF's problem_type: npbert gradcheck checks it as a model of its own


# --- targets: a clear message instead of an IndexError deep inside ---------------------------------------

def int_labels(name, labels, shape, limit, limit_name):
    labels = np.asarray(labels)
    if labels.shape != tuple(shape):
        raise InputError(f"{name} has shape {labels.shape}, expected {tuple(shape)}")
    if not np.issubdtype(labels.dtype, np.integer):
        raise InputError(f"{name} must be integer class ids, got dtype {labels.dtype}")
    check_range(name, labels, limit, limit_name, allow=IGNORE_INDEX)
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
