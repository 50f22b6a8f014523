"""BERT's parameters: their Hugging Face names and shapes, their count, and BERT's initialisation.

Parameters live in one flat dict keyed by Hugging Face `BertForPreTraining` names, with HF's
layouts (linear weights are (out, in)), so a checkpoint maps one-to-one.
"""
from __future__ import annotations

import numpy as np

from npbert.config import BertConfig

WORD_EMBEDDINGS = "bert.embeddings.word_embeddings.weight"
POOLER_WEIGHT = "bert.pooler.dense.weight"   # absent in HF models built without a pooler
# what only next-sentence prediction trains in BertForPreTraining: its head and the pooler it reads
NSP_ONLY_PARAMS = frozenset({POOLER_WEIGHT, "bert.pooler.dense.bias", "cls.seq_relationship.weight",
                             "cls.seq_relationship.bias"})


def param_shapes(config: BertConfig, heads: bool = True) -> dict:
    """name -> shape, in Hugging Face's state_dict order. heads=False gives BertModel's."""
    H, I, V = config.hidden_size, config.intermediate_size, config.vocab_size
    s = {
        "bert.embeddings.word_embeddings.weight": (V, H),
        "bert.embeddings.position_embeddings.weight": (config.max_position_embeddings, H),
        "bert.embeddings.token_type_embeddings.weight": (config.type_vocab_size, H),
        "bert.embeddings.LayerNorm.weight": (H,),
        "bert.embeddings.LayerNorm.bias": (H,),
    }
    for i in range(config.num_hidden_layers):
        p = f"bert.encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            s[p + name + ".weight"], s[p + name + ".bias"] = (H, H), (H,)
        s[p + "attention.output.LayerNorm.weight"], s[p + "attention.output.LayerNorm.bias"] = (H,), (H,)
        s[p + "intermediate.dense.weight"], s[p + "intermediate.dense.bias"] = (I, H), (I,)
        s[p + "output.dense.weight"], s[p + "output.dense.bias"] = (H, I), (H,)
        s[p + "output.LayerNorm.weight"], s[p + "output.LayerNorm.bias"] = (H,), (H,)
    s["bert.pooler.dense.weight"], s["bert.pooler.dense.bias"] = (H, H), (H,)
    if heads:
        s["cls.predictions.bias"] = (V,)
        s["cls.predictions.transform.dense.weight"], s["cls.predictions.transform.dense.bias"] = (H, H), (H,)
        s["cls.predictions.transform.LayerNorm.weight"] = (H,)
        s["cls.predictions.transform.LayerNorm.bias"] = (H,)
        # the decoder weight is tied to the word embeddings: no parameter of its own
        s["cls.seq_relationship.weight"], s["cls.seq_relationship.bias"] = (2, H), (2,)
    return s


def count_params(config: BertConfig, heads: bool = False) -> int:
    """Number of parameters: BertModel (heads=False) or BertForPreTraining (heads=True, tied decoder counted once)."""
    return sum(int(np.prod(shape)) for shape in param_shapes(config, heads).values())


def init_params(config: BertConfig, rng: np.random.Generator, dtype=np.float32, heads: bool = True) -> dict:
    """BERT's initialisation: weights ~ normal(0, initializer_range) truncated at 2 standard
    deviations (as the original TensorFlow code), LayerNorm weight 1 and bias 0, biases 0."""
    params = {}
    for name, shape in param_shapes(config, heads).items():
        if name.endswith("LayerNorm.weight"):
            params[name] = np.ones(shape, dtype)
        elif name.endswith(".bias"):
            params[name] = np.zeros(shape, dtype)
        else:
            params[name] = truncated_normal(rng, shape, config.initializer_range).astype(dtype)
    return params


def truncated_normal(rng: np.random.Generator, shape, std: float) -> np.ndarray:
    x = rng.standard_normal(shape)
    bad = np.abs(x) > 2.0
    while bad.any():                                   # redraw the tails, as tf.truncated_normal does
        x[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(x) > 2.0
    return x * std
