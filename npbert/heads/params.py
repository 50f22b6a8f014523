"""A head's parameters and the config.json fields of a fine-tuned model, for any head
(npbert/heads/head.py): their shapes and initialisation, and the checks a checkpoint's head
passes before it is trained further, evaluated or asked for predictions."""
from __future__ import annotations

import dataclasses

import numpy as np

from npbert.config import BertConfig
from npbert.errors import CheckpointError
from npbert.heads.feature_based import FIELD, FINE_TUNE, feature_choice, feature_width, mix_shapes, with_features
from npbert.layers.scalar_mix import GAMMA
from npbert.layers.scalar_mix import W as MIX_W
from npbert.model_params import truncated_normal

# config.json fields that name a task head (HF's names); a pretraining config has none of them
HEAD_FIELDS = ("architectures", "num_labels", "id2label", "label2id", "problem_type", FIELD)


def head_shapes(config: BertConfig, head, num_labels: int = 2) -> dict:
    """name -> shape of the head's parameters: its linear layer (head.num_outputs rows: QA 2, multiple
    choice 1). A feature-based model's head reads its features (feature_width: 4H when four hidden
    states are concatenated) and a weighted choice adds the scalar mix (npbert/heads/feature_based.py)."""
    K, W = head.num_outputs(num_labels), head.weight
    return {W + ".weight": (K, feature_width(config)), W + ".bias": (K,), **mix_shapes(config)}


def init_head(config: BertConfig, head, num_labels: int, rng, dtype=np.float32) -> dict:
    """BERT's initialisation for a new head: weight ~ truncated normal(0, initializer_range), bias 0;
    a scalar mix starts as the plain mean: weights 0, gamma 1."""
    return {name: (truncated_normal(rng, shape, config.initializer_range) if len(shape) == 2
                   else np.ones(shape) if name == GAMMA else np.zeros(shape)).astype(dtype)
            for name, shape in head_shapes(config, head, num_labels).items()}


def check_head(params, config: BertConfig, head, where) -> int:
    """The head's parameters are present and fit the model's hidden size (a feature-based model's:
    its features' width, and the scalar mix exactly when its choice has one); returns num_labels."""
    feature_choice(config, where)                        # a choice it records is known and fits its layers
    W, F = head.weight, feature_width(config)
    if W + ".weight" not in params or W + ".bias" not in params:
        raise CheckpointError(f"{where} has no {W}.weight/{W}.bias: it is not a fine-tuned "
                              f"{head.architecture} checkpoint")
    w, b = params[W + ".weight"], params[W + ".bias"]
    if w.ndim != 2 or w.shape[1] != F or b.shape != (w.shape[0],):
        width = f"hidden_size {F}" if F == config.hidden_size else \
            f"the width {F} of its features ({FIELD} {config.extra[FIELD]})"
        raise CheckpointError(f"{where}: {W}.weight has shape {w.shape} and {W}.bias {b.shape}, which do not "
                              f"fit {width} (expected (num_labels, {F}))")
    expected = head_shapes(config, head, w.shape[0])
    if w.shape != expected[W + ".weight"]:
        raise CheckpointError(f"{where}: {W}.weight has shape {w.shape}, {head.architecture} needs "
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


def finetuned_config(config: BertConfig, head, label_names=None, features=FINE_TUNE) -> BertConfig:
    """A copy of config whose extra fields say, in HF's names, which head the weights hold:
    architectures, and for a head with named outputs num_labels, id2label, label2id (and what the
    head adds: problem_type); and in npbert's own field, the features a feature-based head reads."""
    extra = {k: v for k, v in config.extra.items() if k not in HEAD_FIELDS}
    extra["architectures"] = [head.architecture]
    if label_names is not None:
        extra.update(head.config_fields(label_names))
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
