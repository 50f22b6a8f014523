"""BertConfig: the hyper-parameters of a BERT model, with Hugging Face's field names.

A config.json written here is one that `transformers.BertConfig.from_pretrained` accepts,
and one written by Hugging Face reads back here (unknown fields are kept, not dropped).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field

from npbert.errors import JSON_ERRORS

# name -> (num_hidden_layers, hidden_size, num_attention_heads); intermediate = 4 * hidden.
# tiny/mini/small/medium are Google's small BERTs (Turc et al. 2019); base/large the paper's.
PRESETS = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}

HIDDEN_ACTS = ("gelu", "gelu_new")  # exact erf form, tanh approximation


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_label_map(value) -> bool:
    """HF's id2label: {"0": name, "1": name, ...}, every id from 0 once (JSON keys are strings)."""
    return (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
            and sorted(str(k) for k in value) == sorted(str(i) for i in range(len(value))))


# The fields of a task head npbert reads from a config's extras (Hugging Face's, and
# npbert_features: feature_based.FIELD), each with what it must be: a config.json written by hand
# or by another tool is checked here, once, instead of failing as a TypeError where it is used.
HEAD_FIELD_TYPES = {
    "architectures": (lambda v: isinstance(v, list) and all(isinstance(a, str) and a for a in v),
                      "a list of class names"),
    "id2label": (_is_label_map, 'an object {"0": label, "1": label, ...} of strings'),
    "problem_type": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "classifier_dropout": (lambda v: v is None or (_is_number(v) and 0 <= v < 1), "null or a number in [0, 1)"),
    "npbert_features": (lambda v: isinstance(v, str), "a string"),
}


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    extra: dict = field(default_factory=dict, repr=False, compare=False)  # fields carried, not used

    def __post_init__(self):
        self.validate()

    def validate(self):
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by "
                             f"num_attention_heads ({self.num_attention_heads})")
        if self.hidden_act not in HIDDEN_ACTS:
            raise ValueError(f"BertConfig.hidden_act must be one of {HIDDEN_ACTS}, got {self.hidden_act!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            p = getattr(self, name)
            if not (_is_number(p) and 0.0 <= p < 1.0):
                raise ValueError(f"BertConfig.{name} must be a number in [0, 1), got {p!r}")
        if not (_is_number(self.layer_norm_eps) and self.layer_norm_eps > 0):
            raise ValueError(f"BertConfig.layer_norm_eps must be a finite number > 0, got {self.layer_norm_eps!r}")
        if not (_is_number(self.initializer_range) and self.initializer_range >= 0):
            raise ValueError(f"BertConfig.initializer_range must be a finite number >= 0, got "
                             f"{self.initializer_range!r}")
        if not isinstance(self.pad_token_id, int) or isinstance(self.pad_token_id, bool):
            raise ValueError(f"BertConfig.pad_token_id must be an integer, got {self.pad_token_id!r}")
        for name, (fits, want) in HEAD_FIELD_TYPES.items():
            if name in self.extra and not fits(self.extra[name]):
                raise ValueError(f"{name} must be {want}, got {json.dumps(self.extra[name])[:100]}")

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_preset(cls, name: str, **overrides) -> "BertConfig":
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
        layers, hidden, heads = PRESETS[name]
        kwargs = dict(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                      intermediate_size=4 * hidden)
        kwargs.update(overrides)
        return cls(**kwargs)

    # --- config.json --------------------------------------------------------------------------
    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out = dict(self.extra)
        out.update(d)
        out.setdefault("model_type", "bert")
        out.setdefault("architectures", ["BertForPreTraining"])
        out.setdefault("position_embedding_type", "absolute")
        return dict(sorted(out.items()))

    @classmethod
    def from_dict(cls, d: dict) -> "BertConfig":
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        if not isinstance(d, dict):
            raise ValueError(f"a config must be a JSON object {{...}}, not {type(d).__name__}")
        if d.get("model_type", "bert") != "bert":
            raise ValueError(f"config has model_type {d.get('model_type')!r}; npbert reads only 'bert'")
        if d.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("npbert supports only position_embedding_type='absolute', got "
                             f"{d.get('position_embedding_type')!r}")
        kwargs = {k: v for k, v in d.items() if k in known}
        extra = {k: v for k, v in d.items() if k not in known}
        return cls(**kwargs, extra=extra)

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def save(self, path: str) -> None:
        """Write config.json (path may be a directory or a file name)."""
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json_string())

    @classmethod
    def load(cls, path: str) -> "BertConfig":
        """Read config.json (path may be a directory or a file name)."""
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(f"no config.json at {path}") from None
        except JSON_ERRORS as e:                      # not UTF-8, not JSON, nested too deep
            raise ValueError(f"{path} is not valid JSON: {str(e)[:200]}") from None
        try:
            return cls.from_dict(d)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: {e}") from None
