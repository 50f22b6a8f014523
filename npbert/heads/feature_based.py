"""The feature-based approach (the BERT paper's section 5.3 and Table 7): the pretrained encoder
frozen, features taken from a chosen combination of its hidden states, a small head trained on
them (npbert/heads/task_model.py runs any head on them; docs/finetuning.md, "Feature-based").

    states = bert_hidden_states(...)        evaluation mode: no dropout, nothing cached, no gradient
    x      = one state | scalar_mix(states) | concat(states)        at [CLS] or at every token
    head(x) -> loss;  backward: the head, then the scalar mix's weights; nothing reaches the encoder

The hidden states are Hugging Face's hidden_states: 0 is the embeddings' output, i the output of
layer i, L the last layer's. The choices (--features), Table 7's rows:

    embeddings          [0]                   the embeddings' output ("First Layer (Embeddings)")
    second-to-last      [L-1]                 "Second-to-Last Hidden"
    last                [L]                   "Last Hidden"
    weighted-last-four  [L-3..L], scalar mix  "Weighted Sum Last Four Hidden" (ELMo's mix)
    concat-last-four    [L-3..L], concatenated (width 4H)       "Concat Last Four Hidden"
    weighted-all        [0..L], scalar mix    "Weighted Sum All 12 Layers", with the embeddings as ELMo

The choice is recorded in the fine-tuned model's config.json as "npbert_features".
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from npbert.config import BertConfig
from npbert.errors import CheckpointError
from npbert.layers.scalar_mix import GAMMA, W, ScalarMixCache, scalar_mix_backward, scalar_mix_forward
from npbert.model import bert_hidden_states
from npbert.trace import NO_TRACE, Trace

FINE_TUNE = "fine-tune"                  # the default: no frozen features, the whole model trained
FIELD = "npbert_features"                # config.json's record of the choice (absent: fine-tuned)


@dataclass(frozen=True)
class Features:
    name: str
    states: Callable                     # L (layers) -> indices into the L + 1 hidden states
    combine: str                         # "one", "weighted" (scalar mix) or "concat"
    about: str

    def indices(self, num_layers: int) -> list:
        return list(self.states(num_layers))


FEATURES = {f.name: f for f in [
    Features("embeddings", lambda L: [0], "one", "the embeddings' output"),
    Features("second-to-last", lambda L: [L - 1], "one", "the second-to-last hidden state"),
    Features("last", lambda L: [L], "one", "the last layer's output"),
    Features("weighted-last-four", lambda L: range(L - 3, L + 1), "weighted",
             "a learned weighted sum (ELMo's scalar mix) of the last four hidden states"),
    Features("concat-last-four", lambda L: range(L - 3, L + 1), "concat",
             "the last four hidden states side by side (width 4H)"),
    Features("weighted-all", lambda L: range(0, L + 1), "weighted",
             "a learned weighted sum of the embeddings' output and every layer's"),
]}
CHOICES = (FINE_TUNE, *FEATURES)


def features_named(name, num_layers: int, where: str, error=CheckpointError) -> Features | None:
    """The choice called name (None for fine-tune) for a model of num_layers layers, or `error`
    naming `where` the choice was given: an unknown name, or hidden states the model does not have."""
    if name == FINE_TUNE:
        return None
    if name not in FEATURES:
        raise error(f"{where} {name!r} is not one of {', '.join(CHOICES)}")
    if min(FEATURES[name].indices(num_layers)) < 0:
        raise error(f"{where} {name} takes the last four hidden states, and a {num_layers}-layer model has "
                    f"{num_layers + 1} (the embeddings' output and {num_layers} layers): choose another "
                    "(weighted-all mixes all of them)")
    return FEATURES[name]


def feature_choice(config: BertConfig, where="the model") -> Features | None:
    """The choice a config records (None: a fine-tuned model), checked against its layers."""
    if FIELD not in config.extra:
        return None
    return features_named(config.extra[FIELD], config.num_hidden_layers, f"{where}: config.json's {FIELD}")


def with_features(config: BertConfig, name: str) -> BertConfig:
    """A copy of config recording the choice name (fine-tune: no record)."""
    extra = {k: v for k, v in config.extra.items() if k != FIELD}
    if name != FINE_TUNE:
        extra[FIELD] = name
    return dataclasses.replace(config, extra=extra)


def feature_width(config: BertConfig) -> int:
    """The width of what the head reads: H, or n H for n concatenated hidden states."""
    choice = feature_choice(config)
    n = len(choice.indices(config.num_hidden_layers)) if choice and choice.combine == "concat" else 1
    return n * config.hidden_size


def mix_shapes(config: BertConfig) -> dict:
    """name -> shape of the scalar mix's parameters, for the weighted choices (else none)."""
    choice = feature_choice(config)
    if choice is None or choice.combine != "weighted":
        return {}
    return {W: (len(choice.indices(config.num_hidden_layers)),), GAMMA: (1,)}


def frozen_names(config: BertConfig, params) -> list:
    """The parameters training leaves alone: the encoder's (all of bert.*, pooler included) for
    the feature-based approach, none when fine-tuning."""
    return [] if feature_choice(config) is None else [k for k in params if k.startswith("bert.")]


# --- the frozen features and their combination ------------------------------------------------------

class FeaturesCache(NamedTuple):
    mix: ScalarMixCache | None           # the weighted choices only: nothing else has a parameter
    trace: Trace | object                # where the model records (NO_TRACE: nowhere)


def features_forward(params, config, input_ids, token_type_ids, attention_mask, at_cls: bool, trace=None):
    """-> x: (B, F) at [CLS] (at_cls) or (B, T, F) at every token, recorded as "features" in the
    trace, and the cache of its combination. The encoder runs in evaluation mode, up to the
    deepest state chosen."""
    trace = NO_TRACE if trace is None else trace
    choice = feature_choice(config)
    indices = choice.indices(config.num_hidden_layers)
    states = bert_hidden_states(params, config, input_ids, token_type_ids, attention_mask, layers=max(indices))
    chosen = [states[i][:, 0] if at_cls else states[i] for i in indices]     # each (B, H) or (B, T, H)
    mix_cache = None
    if choice.combine == "weighted":
        x, mix_cache = scalar_mix_forward(chosen, params)                     # (..., H)
    elif choice.combine == "concat":
        x = np.concatenate(chosen, axis=-1)                                   # (..., n H)
    else:
        x = chosen[0]                                                         # (..., H)
    trace.record("features", x)
    return x, FeaturesCache(mix_cache, trace)


def features_backward(dx, cache: FeaturesCache) -> dict:
    """dx: d loss / d x -> the grads of the combination's parameters (none but the scalar mix's):
    the hidden states are frozen, so nothing goes further."""
    cache.trace.record_grad("features", dx)
    return {} if cache.mix is None else scalar_mix_backward(dx, cache.mix)
