"""Every op, layer, head and whole model as a case for the finite-difference checker
(checker.py): its float64 inputs at small, deliberately unequal sizes, how to run it, and how
to get its gradients. The same cases, with everything else they read (ids, masks, positions,
labels, constants; for a whole model, its call) and in float32 too, are the golden vectors
(npbert/golden/).

The hot ops (npbert.backend.HOT_OPS) are called through npbert.backend, so every row, not only
the composites, checks the backend in force: `npbert gradcheck --backend numba` checks the kernels.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from npbert import backend, ops
from npbert.config import BertConfig
from npbert.errors import NpbertError
from npbert.gradcheck.checker import check
from npbert.heads import sequence, span
from npbert.heads.feature_based import with_features
from npbert.heads.head import CLS, TOKENS
from npbert.heads.params import init_head
from npbert.heads.registry import HEADS
from npbert.heads.span import qa_head_backward, qa_head_forward, span_loss_backward, span_loss_forward
from npbert.layers.attention import self_attention_backward, self_attention_forward
from npbert.layers.classifier import classifier_backward, classifier_forward
from npbert.layers.embeddings import bert_embeddings_backward, bert_embeddings_forward
from npbert.layers.encoder import encoder_backward, encoder_forward, layer_params
from npbert.layers.encoder_layer import encoder_layer_backward, encoder_layer_forward
from npbert.layers.feedforward import feedforward_backward, feedforward_forward
from npbert.layers.layout import Packed, Padded
from npbert.layers.mlm_head import (WORD, MlmHeadCache, mlm_head_backward, mlm_head_forward, mlm_loss_backward,
                                    mlm_loss_forward, mlm_transform_backward, mlm_transform_forward)
from npbert.layers.nsp_head import nsp_head_backward, nsp_head_forward
from npbert.layers.pooler import pooler_backward, pooler_forward
from npbert.layers.scalar_mix import GAMMA, scalar_mix_backward, scalar_mix_forward
from npbert.layers.scalar_mix import W as MIX_W
from npbert.model import bert_backward, bert_forward, pretraining_backward, pretraining_forward
from npbert.model_params import init_params
from npbert.ops.dropout import DropoutStream, dropout_key
from npbert.ops.packed_attention import AttentionLayout
from npbert.trace import NO_TRACE

# --- the ops, each as a checkable case -------------------------------------------------------------

@dataclass
class Dims:
    """Sizes of a small random problem; the hypothesis tests draw these."""
    B: int = 2
    T: int = 5
    heads: int = 2
    head_size: int = 3
    I: int = 7
    V: int = 11
    layers: int = 2
    hidden_act: str = "gelu"
    dropout: float = 0.0                               # hidden and attention dropout
    lengths: tuple = ()                                # real tokens per row (rest padding); () = no padding
    seed: int = 0
    dtype: type = np.float64                           # float32: the same numbers, rounded (golden vectors only)

    @property
    def H(self):
        return self.heads * self.head_size

    def config(self) -> BertConfig:
        return BertConfig(vocab_size=self.V, hidden_size=self.H, num_hidden_layers=self.layers,
                          num_attention_heads=self.heads, intermediate_size=self.I, hidden_act=self.hidden_act,
                          hidden_dropout_prob=self.dropout, attention_probs_dropout_prob=self.dropout,
                          max_position_embeddings=self.T + 2, type_vocab_size=2)

    def attention_mask(self):
        mask = np.ones((self.B, self.T), dtype=np.int64)
        for b, n in enumerate(self.lengths[:self.B]):
            mask[b, max(1, n):] = 0                    # every row keeps at least one real token
        return mask

    def rng(self):
        """A fresh Generator for dropout: same seed, same mask, on every call."""
        return np.random.default_rng(self.seed + 1) if self.dropout > 0 else None


class ModelCall(NamedTuple):
    """A whole model as its user calls it: forward(params, config, **inputs) -> (outputs, cache), backward(cache)."""
    forward: Callable
    backward: Callable
    config: BertConfig
    params: dict                                       # every parameter, differentiated or not
    inputs: dict                                       # ids, masks, positions, labels: forward's keyword arguments


class Case(NamedTuple):
    inputs: dict                                       # name -> array the finite differences perturb
    run: Callable                                      # inputs -> (output, cache)
    backward: Callable                                 # (upstream gradient, cache) -> {name: gradient}
    shapes: str
    fixed: dict                                        # what run also reads, not differentiated: ids, masks, constants
    model: ModelCall | None = None
    golden: bool = True                                # False: npbert's own (feature-based), not BERT's: no golden


def _normal(rng, *shape):
    return rng.standard_normal(shape)


def _pad_row_constant(table, table0, pad):
    """The table as the lookup sees it with padding_idx = pad: row pad held at its value table0[pad]
    (a constant, as PyTorch's padding_idx makes it), so finite differences of that row are 0 as the
    backward says. The whole-model cases leave [PAD] out of their ids instead: there the tied
    decoder reads the same table, and its share of row pad's gradient is checked too."""
    table = table.copy()
    table[pad] = table0[pad]
    return table


def op_cases(d: Dims):
    """name -> Case for every op, layer, head and whole model, at the sizes in d (float64 unless d.dtype).
    The groups below draw from one Generator in this order: the golden vectors depend on it."""
    problem, cases = _problem(d), {}
    add = _adder(cases, d.dtype)
    _leaf_op_cases(problem, add)
    _layer_cases(problem, add)
    batch = _pretraining_cases(problem, add)
    cases.update(head_cases(d, problem.params, batch, problem.rng))
    return cases


class _Problem(NamedTuple):
    """The draws every group of cases shares: a model's parameters, a batch's ids and masks, an input x."""
    d: Dims
    rng: np.random.Generator
    config: BertConfig
    params: dict
    mask: np.ndarray                                   # (B, T) 1 real, 0 padding
    mask_bias: np.ndarray                              # (B, 1, 1, T)
    ids: np.ndarray                                    # (B, T), [PAD] only where padded
    ids_with_pad: np.ndarray                           # (B, T), [PAD] at a real position too
    types: np.ndarray                                  # (B, T)
    positions: np.ndarray                              # (P,) flat MLM positions, one repeated
    x: np.ndarray                                      # (B, T, H)


def _problem(d: Dims) -> _Problem:
    rng = np.random.default_rng(d.seed)
    B, T, V = d.B, d.T, d.V
    config = d.config()
    params = _case_params(config, rng, d.dtype)
    mask = d.attention_mask()
    ids = rng.integers(1, V, (B, T))                   # [PAD] (id 0) only where padded: see _pad_row_constant
    ids[0, :2] = ids[0, 0]                             # a repeated id: the scatter-add must accumulate
    ids[mask == 0] = config.pad_token_id
    ids_with_pad = ids.copy()
    ids_with_pad[-1, 0] = config.pad_token_id          # [PAD] at a real position too: no gradient there either
    types = rng.integers(0, 2, (B, T))
    real = np.flatnonzero(mask.reshape(-1))            # MLM positions are real tokens, never padding
    positions = rng.choice(real, size=min(4, len(real)), replace=False)
    positions[-1] = positions[0] if len(positions) > 1 else positions[-1]  # one position gathered twice
    return _Problem(d, rng, config, params, mask, ops.attention_mask_bias(mask, d.dtype), ids, ids_with_pad,
                    types, positions, _normal(rng, B, T, d.H))


def _adder(cases: dict, dtype):
    """add(name, inputs, run, backward, shapes, fixed, model, golden): a Case in cases, its inputs in dtype."""
    def add(name, inputs, run, backward, shapes, fixed=None, model=None, golden=True):
        cases[name] = Case({k: np.asarray(v, dtype) for k, v in inputs.items()}, run, backward, shapes,
                           fixed or {}, model, golden)
    return add


def _leaf_op_cases(pr: _Problem, add) -> None:
    """The leaf ops of npbert/ops (the hot ones through the backend switch)."""
    d, rng, x, ids, pad = pr.d, pr.rng, pr.x, pr.ids, pr.config.pad_token_id
    B, T, H, I, V, A = d.B, d.T, d.H, d.I, d.V, d.heads
    add("linear", {"x": x, "w": _normal(rng, I, H), "b": _normal(rng, I)},
        lambda p: backend.linear_forward(p["x"], p["w"], p["b"]),
        lambda dy, c: dict(zip(("x", "w", "b"), backend.linear_backward(dy, c))), f"({B},{T},{H})->({B},{T},{I})")
    add("embedding", {"table": _normal(rng, V, H)},
        lambda p: backend.embedding_forward(ids, p["table"]),
        lambda dy, c: {"table": backend.embedding_backward(dy, c)}, f"ids ({B},{T}), table ({V},{H})", dict(ids=ids))
    table = _normal(rng, V, H)
    table0 = table.copy()                              # a copy: the finite differences perturb table in place
    add("embedding[padding_idx]", {"table": table},
        lambda p: backend.embedding_forward(pr.ids_with_pad, _pad_row_constant(p["table"], table0, pad), pad),
        lambda dy, c: {"table": backend.embedding_backward(dy, c)}, f"ids ({B},{T}) with [PAD], table ({V},{H})",
        dict(ids=pr.ids_with_pad, padding_idx=pad))
    add("layernorm", {"x": _normal(rng, B, T, H), "gamma": 1 + _normal(rng, H), "beta": _normal(rng, H)},
        lambda p: backend.layernorm_forward(p["x"], p["gamma"], p["beta"], 1e-12),
        lambda dy, c: dict(zip(("x", "gamma", "beta"), backend.layernorm_backward(dy, c))), f"({B},{T},{H})",
        dict(eps=1e-12))
    for act in ("gelu", "gelu_new"):
        add(f"gelu[{act}]", {"x": 2 * _normal(rng, B, T, I)},
            functools.partial(lambda p, act: backend.gelu_forward(p["x"], act), act=act),
            lambda dy, c: {"x": backend.gelu_backward(dy, c)}, f"({B},{T},{I})", dict(hidden_act=act))
        add(f"linear_gelu[{act}]", {"x": x, "w": _normal(rng, I, H), "b": _normal(rng, I)},
            functools.partial(lambda p, act: backend.linear_gelu_forward(p["x"], p["w"], p["b"], act), act=act),
            lambda dy, c: dict(zip(("x", "w", "b"), backend.linear_gelu_backward(dy, c))),
            f"({B},{T},{H})->({B},{T},{I})", dict(hidden_act=act))
    add("dropout", {"x": _normal(rng, B, T, H)},               # the first call of a step: its keep from (seed, step)
        lambda p: backend.dropout_forward(p["x"], 0.3, DropoutStream(d.seed + 7, 1)),
        lambda dy, c: {"x": backend.dropout_backward(dy, c)}, f"({B},{T},{H}) p=0.3",
        dict(p=0.3, dropout_seed=d.seed + 7, step=1, call=0))
    add("softmax", {"x": _normal(rng, B, A, T, T)},
        lambda p: ops.softmax_forward(p["x"]),
        lambda dy, c: {"x": ops.softmax_backward(dy, c)}, f"({B},{A},{T},{T})")
    qkv = {n: _normal(rng, B, A, T, d.head_size) for n in ("q", "k", "v")}
    add("attention_core", qkv,
        lambda p: backend.attention_core_forward(p["q"], p["k"], p["v"], pr.mask_bias, d.dropout, d.rng()),
        lambda dy, c: dict(zip("qkv", backend.attention_core_backward(dy, c))), f"({B},{A},{T},{d.head_size})",
        dict(mask_bias=pr.mask_bias))
    _packed_attention_case(d, pr.mask, add)


def _packed_attention_case(d: Dims, mask, add) -> None:
    """Packed attention (npbert/ops/packed_attention.py): the batch's real tokens as keys, a random
    subset of them as queries (the last layer's read rows: each sequence's first and about half
    the others; with three sequences or more the last gets none), dropout at the padded step's
    indices (one key, the same at every evaluation).
    Drawn from a Generator of its own, so every other case's draws stay as they were; npbert's own
    op, not BERT's: no golden vector."""
    rng, A = np.random.default_rng(d.seed + 13), d.heads
    k_lengths, k_positions = mask.sum(axis=1), np.nonzero(mask)[1]                # (B,), (N,)
    first = np.cumsum(k_lengths) - k_lengths                                      # (B,) each sequence's first row
    query = rng.random(len(k_positions)) < 0.5                                    # (N,) bool
    query[first] = True                                                           # [CLS]: the heads read it
    if d.B > 2:
        query[first[-1]:] = False                                                 # a sequence without queries
    sequence = np.repeat(np.arange(d.B), k_lengths)                               # (N,) each key's sequence
    layout = AttentionLayout(np.bincount(sequence[query], minlength=d.B), k_lengths, k_positions[query],
                             k_positions, d.T)
    key = dropout_key(d.rng()) if d.dropout > 0 else None
    M, N, H = int(query.sum()), len(k_positions), d.H
    add("packed_attention", {"q": _normal(rng, M, H), "k": _normal(rng, N, H), "v": _normal(rng, N, H)},
        lambda p: backend.packed_attention_forward(p["q"], p["k"], p["v"], layout, A, d.dropout, key),
        lambda dy, c: dict(zip("qkv", backend.packed_attention_backward(dy, c))),
        f"q ({M},{H}) of k ({N},{H}) heads={A}", dict(q_lengths=layout.q_lengths, k_lengths=k_lengths,
                                                      q_positions=layout.q_positions, k_positions=k_positions),
        golden=False)


def _layer_cases(pr: _Problem, add) -> None:
    """The layers of npbert/layers, each over its own slice of the model's parameters (no draws),
    on the padded layout: its rows are the batch's B*T positions, given and returned as (B, T, ...)."""
    d, config, params, x, mask_bias = pr.d, pr.config, pr.params, pr.x, pr.mask_bias
    B, T, H, I, V, A = d.B, d.T, d.H, d.I, d.V, d.heads
    padded = Padded(pr.mask, d.dtype)
    layer0 = layer_params(params, 0)
    attn_keys = [k for k in layer0 if k.startswith("attention.") and "LayerNorm" not in k]
    add("self_attention", {"x": x, **{k: layer0[k] for k in attn_keys}},
        *_over_rows(padded, lambda x, p: self_attention_forward(x, padded, p, A, d.dropout, d.rng()),
                    self_attention_backward), f"({B},{T},{H}) heads={A}",
        dict(mask_bias=mask_bias, num_attention_heads=A))
    ffn_keys = [k for k in layer0 if k.startswith(("intermediate.", "output.dense"))]
    add("feedforward", {"x": x, **{k: layer0[k] for k in ffn_keys}},
        lambda p: feedforward_forward(p["x"], p, d.hidden_act),
        lambda dy, c: _merge(feedforward_backward(dy, c)), f"({B},{T},{H})->({B},{T},{I})->({B},{T},{H})",
        dict(hidden_act=d.hidden_act))
    add("encoder_layer", {"x": x, **layer0},
        *_over_rows(padded, lambda x, p: encoder_layer_forward(x, padded, p, config, d.rng()),
                    encoder_layer_backward), f"({B},{T},{H})", dict(mask_bias=mask_bias))
    enc = {k: v for k, v in params.items() if k.startswith("bert.encoder.")}
    add("encoder", {"x": x, **enc},
        *_over_rows(padded, lambda x, p: encoder_forward(x, padded, p, config, d.rng()), encoder_backward),
        f"{d.layers} layers ({B},{T},{H})", dict(mask_bias=mask_bias))
    emb = {k: v for k, v in params.items() if k.startswith("bert.embeddings.")}
    table0, pad = emb[WORD].copy(), config.pad_token_id
    add("bert_embeddings", emb,
        lambda p: _batched(padded, bert_embeddings_forward(pr.ids_with_pad, pr.types, padded,
                                                           {**p, WORD: _pad_row_constant(p[WORD], table0, pad)},
                                                           config, d.rng())),
        lambda dy, c: bert_embeddings_backward(padded.rows_of(dy), c), f"ids ({B},{T}) -> ({B},{T},{H})",
        dict(input_ids=pr.ids_with_pad, token_type_ids=pr.types))
    pool = {k: v for k, v in params.items() if k.startswith("bert.pooler.")}
    add("pooler", {"h": x, **pool},
        lambda p: pooler_forward(p["h"][:, 0], p),                                        # [CLS] (B, H)
        lambda dy, c: _merge(_at_cls(pooler_backward(dy, c), x.shape), "h"), f"({B},{T},{H})->({B},{H})")
    mlm = {k: v for k, v in params.items() if k.startswith("cls.predictions.")}
    mlm[WORD] = params[WORD]
    P = len(pr.positions)
    add("mlm_head", {"h": x, **mlm},
        lambda p: mlm_head_forward(padded.rows_of(p["h"]), pr.positions, p, config),
        lambda dy, c: _merge(_batched(padded, mlm_head_backward(dy, c)), "h"),
        f"({B},{T},{H}) at {P} positions -> ({P},{V})", dict(mlm_positions=pr.positions))


def _pretraining_cases(pr: _Problem, add) -> dict:
    """The NSP head, cross-entropy and the whole pretraining model; returns the model's batch."""
    d, rng, config, params = pr.d, pr.rng, pr.config, pr.params
    B, T, H, V, A = d.B, d.T, d.H, d.V, d.heads
    nsp = {k: v for k, v in params.items() if k.startswith("cls.seq_relationship.")}
    add("nsp_head", {"pooled": _normal(rng, B, H), **nsp},
        lambda p: nsp_head_forward(p["pooled"], p),
        lambda dy, c: _merge(nsp_head_backward(dy, c), "pooled"), f"({B},{H})->({B},2)")
    labels = rng.integers(0, V, B * T)
    labels[::3] = ops.IGNORE_INDEX
    add("cross_entropy", {"logits": _normal(rng, B * T, V)},
        lambda p: backend.cross_entropy_forward(p["logits"], labels),
        lambda dl, c: {"logits": backend.cross_entropy_backward(dl, c)}, f"({B * T},{V}) ignore_index rows",
        dict(labels=labels))
    mlm_labels = rng.integers(0, V, len(pr.positions))
    mlm_labels[1:2] = ops.IGNORE_INDEX                 # a masked position that does not count
    batch = dict(input_ids=pr.ids, token_type_ids=pr.types, attention_mask=pr.mask, mlm_positions=pr.positions,
                 mlm_labels=mlm_labels, nsp_labels=rng.integers(0, 2, B))
    add("bert_for_pretraining", dict(params),
        lambda p: _model_loss(p, config, batch, d.rng()),
        lambda dl, c: pretraining_backward(c, dl), f"L={d.layers} H={H} A={A} V={V} ({B},{T}) all params",
        model=ModelCall(pretraining_forward, pretraining_backward, config, params, batch))
    _packed_cases(pr, batch, add)
    _fused_decoder_cases(pr, add)
    return batch


def _fused_decoder_cases(pr: _Problem, add) -> None:
    """The MLM decoder and its cross-entropy fused (ops/decoder_cross_entropy.py, layers/mlm_head.py:
    what the training step runs), and the head's transform alone. npbert's own way to compute
    BERT's numbers: no golden vectors; drawn from a Generator of their own."""
    d, config, params = pr.d, pr.config, pr.params
    rng = np.random.default_rng(d.seed + 17)
    P, H, V = len(pr.positions), d.H, d.V
    labels = rng.integers(0, V, P)
    labels[1:2] = ops.IGNORE_INDEX                                                  # a row that does not count
    add("decoder_cross_entropy", {"t": _normal(rng, P, H), "w": _normal(rng, V, H), "b": _normal(rng, V)},
        lambda p: backend.decoder_cross_entropy_forward(p["t"], p["w"], p["b"], labels),
        lambda dl, c: dict(zip(("t", "w", "b"), backend.decoder_cross_entropy_backward(dl, c))),
        f"({P},{H}) x ({V},{H}) -> loss, ignore_index rows", dict(labels=labels), golden=False)
    mlm = {k: v for k, v in params.items() if k.startswith("cls.predictions.")}
    mlm[WORD] = params[WORD]
    padded = Padded(pr.mask, d.dtype)                                               # h (B, T, H) as rows
    add("mlm_loss", {"h": pr.x, **mlm},
        lambda p: _first_output(mlm_loss_forward(padded.rows_of(p["h"]), pr.positions, p, config, labels)),
        lambda dl, c: _merge(_batched(padded, mlm_loss_backward(dl, c)), "h"),
        f"({d.B},{d.T},{H}) at {P} positions -> loss",
        dict(mlm_positions=pr.positions, labels=labels), golden=False)
    transform = {k: v for k, v in mlm.items() if k.startswith("cls.predictions.transform.")}
    add("mlm_transform", {"h": pr.x, **transform},
        lambda p: _transform(padded.rows_of(p["h"]), pr.positions, p, config),
        lambda dy, c: _merge(_batched(padded, mlm_transform_backward(dy, c)), "h"),
        f"({d.B},{d.T},{H}) at {P} positions -> ({P},{H})",
        dict(mlm_positions=pr.positions), golden=False)


def _first_output(result):
    (loss, _), cache = result                          # (loss, predictions), cache
    return loss, cache


def _transform(h, positions, params, config):
    # h: (N, H) rows -> t: (M, H), a cache
    t, dense, norm = mlm_transform_forward(h, positions, params, config)
    return t, MlmHeadCache(dense, norm, None, positions, h.shape)   # what mlm_transform_backward reads


def _packed_cases(pr: _Problem, batch, add) -> None:
    """The same layers and models on the packed layout (npbert/layers/layout.py), each at the rows
    the heads read (the masked positions and [CLS]) where it has them. npbert's own way to compute
    BERT's numbers: no golden vectors (and nothing drawn from pr.rng, which the golden cases' draws
    share)."""
    d, config, params = pr.d, pr.config, pr.params
    packed = Packed(pr.mask, pr.positions, cls=True)
    rows = packed.read_rows                                                                     # (R,)
    N, R, H = len(packed.positions), len(rows), d.H
    x = packed.rows_of(pr.x)                                                                    # (N, H)
    layer = layer_params(params, config.num_hidden_layers - 1)
    shapes = f"({N},{H}) real tokens -> ({R},{H}) read rows"
    add("dropout_rows[packed, read rows]", {"x": x[rows]},
        lambda p: packed.reading().dropout(p["x"], 0.3, np.random.default_rng(d.seed + 7)),
        lambda dy, c: {"x": backend.dropout_backward(dy, c)}, f"({R},{H}) p=0.3", golden=False)
    emb = {k: v for k, v in params.items() if k.startswith("bert.embeddings.")}
    add("bert_embeddings[packed]", emb,
        lambda p: bert_embeddings_forward(pr.ids, pr.types, packed, p, config, d.rng()),
        lambda dy, c: bert_embeddings_backward(dy, c), f"({d.B},{d.T}) -> ({N},{H})", golden=False)
    attention = {k: v for k, v in layer.items() if k.startswith(("attention.self.", "attention.output.dense."))}
    add("self_attention[packed, read rows]", {"x": x, **attention},
        lambda p: self_attention_forward(p["x"][rows], packed.reading(), p, d.heads, d.dropout, d.rng(),
                                         memory=p["x"]),
        lambda dy, c: _merge(self_attention_backward(dy, c)), shapes, golden=False)
    add("encoder_layer[packed, read rows]", {"x": x, **layer},
        lambda p: encoder_layer_forward(p["x"][rows], packed.reading(), p, config, d.rng(), memory=p["x"]),
        lambda dy, c: _merge(encoder_layer_backward(dy, c)), shapes, golden=False)
    encoder = {k: v for k, v in params.items() if k.startswith("bert.encoder.")}
    add("encoder[packed, read rows]", {"x": x, **encoder},
        lambda p: encoder_forward(p["x"], packed, p, config, d.rng()),
        lambda dy, c: _merge(encoder_backward(dy, c)), f"L={d.layers} " + shapes, golden=False)
    bert = {k: v for k, v in params.items() if k.startswith("bert.")}
    add("bert_model[packed, read rows]", bert,
        lambda p: _sequence_output(bert_forward(p, config, pr.ids, pr.types, pr.mask, d.rng(), packed=True,
                                                read=pr.positions)),
        lambda dy, c: bert_backward(dy, None, c), f"L={d.layers} ({d.B},{d.T}) -> ({R},{H})", golden=False)
    add("bert_for_pretraining[packed]", dict(params),
        lambda p: _model_loss(p, config, batch, d.rng(), packed=True),
        lambda dl, c: pretraining_backward(c, dl),
        f"L={d.layers} ({d.B},{d.T}) -> {N} real tokens, last layer at {R}: all params", golden=False)


def _at_cls(dcls_and_grads, shape):
    # (dcls (B, H), grads) -> (dh (B, T, H): dcls at position 0, [CLS], zero elsewhere; grads)
    dcls, grads = dcls_and_grads
    dh = np.zeros(shape, dtype=dcls.dtype)             # (B, T, H)
    dh[:, 0] = dcls
    return dh, grads


def _sequence_output(outputs_and_cache):
    (h, _), cache = outputs_and_cache                  # the pooled output's gradient: zero (not read)
    return h, cache


def _over_rows(layout, forward, backward):
    """(run, backward) of a case whose input x is (B, T, H), for a layer over the padded layout's
    rows: forward(x (N, H), p) -> (y (N, H), cache), backward(dy, cache) -> (dx, grads)."""
    def run(p):
        return _batched(layout, forward(layout.rows_of(p["x"]), p))                 # (B, T, H)

    def back(dy, cache):
        dx, grads = backward(layout.rows_of(dy), cache)                             # (N, H)
        return {"x": layout.batched(dx), **grads}                                   # (B, T, H)
    return run, back


def _batched(layout, out_and_cache):
    out, cache = out_and_cache                                                      # (N, ...)
    return layout.batched(out), cache                                               # (B, T, ...)


def _case_params(config, rng, dtype):
    """init_params with non-trivial biases and LayerNorm (so they are tested) and larger weights."""
    params = init_params(config, rng, np.float64)
    for k in params:
        params[k] = params[k] + 0.1 * _normal(rng, *params[k].shape) if params[k].ndim == 1 else params[k] * 10
    return {k: v.astype(dtype) for k, v in params.items()}


def _merge(dx_and_grads, name="x"):
    dx, grads = dx_and_grads
    return {name: dx, **grads}


def _model_loss(params, config, batch, rng, packed=False):
    out, cache = pretraining_forward(params, config, **batch, rng=rng, packed=packed)
    return out["loss"], cache


def run_gradchecks(d: Dims = None, names=None) -> list:
    """Check every op (or those names select, see select_checks) at sizes d -> [GradcheckResult]."""
    return list(iter_gradchecks(d, names))


def iter_gradchecks(d: Dims = None, names=None):
    """run_gradchecks, yielding each result as it is done; unknown names are an error at once."""
    d = d or Dims()
    cases = op_cases(d)
    chosen = list(cases) if names is None else select_checks(list(cases), names)
    return (check(name, cases[name].inputs, cases[name].run, cases[name].backward, cases[name].shapes, seed=d.seed)
            for name in chosen)


def select_checks(names, patterns, what="gradient check") -> list:
    """The names (in their order) the patterns select. A pattern selects the name equal to it and
    that name's variants (`gelu`: gelu[gelu] and gelu[gelu_new]); a `*` stands for any characters
    (`bert_for_*`). Not a plain prefix: `linear` must not also run linear_gelu. A pattern that
    selects nothing is an error listing the names."""
    chosen = set()
    for pattern in patterns:
        variants = re.compile(re.escape(pattern).replace(r"\*", ".*") + r"(\[.*\])?")
        hits = {name for name in names if variants.fullmatch(name)}
        if not hits:
            raise NpbertError(f"no {what} is named {pattern!r}; the names are {', '.join(names)}")
        chosen |= hits
    return [name for name in names if name in chosen]


# --- the fine-tuning heads and their models (npbert/heads/) --------------------------------------------------

NUM_LABELS, NUM_CHOICES = 3, 2
FEATURE_ROWS = ("weighted-last-four", "concat-last-four", "weighted-all", "second-to-last")   # one head each


def head_cases(d: Dims, params, batch, rng):
    """The heads' layers, each whole model + head, the feature-based models, each head alone. The
    whole-model cases differentiate the head, the pooler (for the heads on the pooled output) and
    the word and token-type embeddings and their LayerNorm: the far end of the chain, where a wrong
    dh or dpooled shows (bert_for_pretraining checks every encoder parameter; tests/model/test_heads.py
    every parameter of each model + head once)."""
    from npbert.heads.task_model import task_model_backward, task_model_forward
    B, T, K, C = d.B, d.T, NUM_LABELS, NUM_CHOICES
    config, cases = d.config(), {}

    add = _adder(cases, d.dtype)

    def head_params(head, k, config=config):
        p = init_head(config, head, k, rng, np.float64)
        return {n: (a * 10 if a.ndim == 2 else a + 0.1 * _normal(rng, *a.shape)).astype(d.dtype) for n, a in p.items()}

    start, end = head_layer_cases(d, add, head_params, rng)
    base = {k: v for k, v in params.items() if not k.startswith("cls.")}
    far_end = [k for k in base if k.startswith("bert.embeddings.") and "position" not in k]
    inputs3 = {k: np.repeat(batch[k][:, None], C, axis=1) for k in ("input_ids", "token_type_ids", "attention_mask")}
    inputs3["input_ids"][:, 1] = rng.integers(1, d.V, (B, T))             # the choices differ (no [PAD])
    token_labels = rng.integers(0, K, (B, T))
    token_labels[(np.arange(T) == 0) | (batch["attention_mask"] == 0)] = ops.IGNORE_INDEX   # [CLS], padding
    pool = dict(token_labels=token_labels, start=start, end=end)
    models = [(f"bert_for_{name}", head, k, labels, _model_shapes(d, head, k))
              for name, head, k, labels in _head_rows(d, pool, rng)]

    def inputs_of(head):                                                  # (B, C, T) for a head with choices
        return inputs3 if head.choices else {k2: batch[k2] for k2 in inputs3}
    for name, head, k, labels, shapes in models:
        hp = head_params(head, k)
        fixed = {**base, **hp}
        data = inputs_of(head)
        forward, backward = functools.partial(task_model_forward, head), functools.partial(task_model_backward, 1.0)
        pooler = [k2 for k2 in base if k2.startswith("bert.pooler.") and head.reads == CLS]
        # QA's span softmax reaches padded positions, whose [PAD] row padding_idx holds constant in the
        # lookup: the word table is differenced in bert_embeddings instead (and against HF in tests/model/test_heads.py)
        emb = [k2 for k2 in far_end if not (head.reads_padding and k2 == WORD)]
        add(name, {k2: fixed[k2] for k2 in emb + pooler + list(hp)},
            functools.partial(_task_model_run, forward, fixed, config, {**data, **labels}, d.rng),
            lambda dl, c: task_model_backward(dl, c), f"{shapes} head,{'pooler,' if pooler else ''}emb",
            model=ModelCall(forward, backward, config, fixed, {**data, **labels}))

    same_as = {head.name: (labels, shapes) for name, head, k, labels, shapes in models
               if name == f"bert_for_{head.name}"}                        # each head's targets and shapes
    feature_based_cases(d, add, head_params, inputs_of, same_as, rng)
    cases.update(head_alone_cases(d, config, head_params, pool, rng))
    return cases


def _head_rows(d: Dims, pool, rng) -> list:
    """(name, head, K, targets) for each head of HEADS, and for a head whose one-output form is a
    regression, that form too: every head of the one list is checked, drawing its targets from
    what it reads (the pool: token labels and answer positions drawn before)."""
    rows = []
    for head in HEADS.values():
        k = head.num_outputs(NUM_LABELS)
        rows.append((head.name, head, k, _targets(d, head, k, pool, rng)))
        if head.regression:
            rows.append((head.regression, head, 1, _targets(d, head, 1, pool, rng)))
    return rows


def _targets(d: Dims, head, k, pool, rng) -> dict:
    """Random targets of a head with k outputs: answer positions, a label per token, the right
    choice, a class per sequence, or (one output: a regression, as Hugging Face's) a number."""
    B = d.B
    if "start_positions" in head.targets:
        return dict(start_positions=pool["start"], end_positions=pool["end"])
    if head.reads == TOKENS:
        return dict(labels=pool["token_labels"])
    if head.choices:
        return dict(labels=rng.integers(0, NUM_CHOICES, B))
    return dict(labels=rng.integers(0, k, B) if k > 1 else _normal(rng, B).astype(d.dtype))


def _model_shapes(d: Dims, head, k) -> str:
    """The row's description: input ids -> the head's logits."""
    B, T, C = d.B, d.T, NUM_CHOICES
    if head.choices:
        return f"({B},{C},{T}) -> ({B},{C})"
    if head.reads == TOKENS:
        return f"({B},{T}) -> ({B},{T},{k})"
    return f"({B},{T}) -> ({B},{k})" + (", MSE" if k == 1 else "")


def head_layer_cases(d: Dims, add, head_params, rng) -> tuple:
    """The layers the heads are made of: classifier, qa_head, span_loss, mse (golden vectors).
    -> the span loss's (start, end) positions, which the QA model's row reuses."""
    B, T, H, K = d.B, d.T, d.H, NUM_LABELS
    cls = head_params(sequence.HEAD, K)
    add("classifier", {"x": _normal(rng, B, T, H), **cls},
        lambda p: classifier_forward(p["x"], p, d.dropout, d.rng()),
        lambda dy, c: _merge(classifier_backward(dy, c)), f"dropout, ({B},{T},{H})->({B},{T},{K})",
        dict(p=d.dropout))
    qa = head_params(span.HEAD, 2)
    add("qa_head", {"h": _normal(rng, B, T, H), **qa},
        lambda p: qa_head_forward(p["h"], p),
        lambda dy, c: _merge(qa_head_backward(dy, c), "h"), f"({B},{T},{H})->({B},{T},2)")
    start, end = rng.integers(0, T, B), rng.integers(0, T, B)
    start[-1], end[0] = T + 2, -1                      # out of range: ignored, and clamped to [CLS]
    add("span_loss", {"logits": _normal(rng, B, T, 2)},
        lambda p: span_loss_forward(p["logits"], start, end),
        lambda dl, c: {"logits": span_loss_backward(dl, c)}, f"({B},{T},2) clamped positions",
        dict(start_positions=start, end_positions=end))
    target = _normal(rng, B * T).astype(d.dtype)
    add("mse", {"pred": _normal(rng, B * T)},
        lambda p: ops.mse_forward(p["pred"], target),
        lambda dl, c: {"pred": ops.mse_backward(dl, c)}, f"({B * T},)", dict(target=target))
    return start, end


def feature_based_cases(d: Dims, add, head_params, inputs_of, same_as, rng) -> None:
    """The scalar mix alone, then each head on a frozen encoder's features (npbert/heads/feature_based.py).
    same_as: each head kind's targets and shapes, as its bert_for_* row has them."""
    from npbert.heads.task_model import task_model_backward, task_model_forward
    B, T, H, K = d.B, d.T, d.H, NUM_LABELS
    # npbert's own, not BERT's: not golden vectors (and drawn from rng after every golden case, which
    # stay as they were). The frozen encoder has 3 layers or more (the last four hidden states must
    # exist): each head once, each way of combining the hidden states once.
    states = [_normal(rng, B, T, H) for _ in range(3)]
    add("scalar_mix", {MIX_W: _normal(rng, 3), GAMMA: 1 + _normal(rng, 1)},
        lambda p: scalar_mix_forward(states, p),
        lambda dy, c: scalar_mix_backward(dy, c), f"3 x ({B},{T},{H})->({B},{T},{H})",
        dict(states=np.stack(states)), golden=False)
    frozen_config = dataclasses.replace(d, layers=max(d.layers, 3)).config()
    frozen = {k: v for k, v in _case_params(frozen_config, rng, d.dtype).items() if not k.startswith("cls.")}
    for i, head in enumerate(HEADS.values()):
        k, features = head.num_outputs(K), FEATURE_ROWS[i % len(FEATURE_ROWS)]
        fconfig = with_features(frozen_config, features)
        hp = head_params(head, k, fconfig)
        if MIX_W in hp:
            hp[MIX_W] = _normal(rng, *hp[MIX_W].shape).astype(d.dtype)     # unequal layer weights
        data = inputs_of(head)
        forward = functools.partial(task_model_forward, head)
        labels, shapes = same_as[head.name]
        add(f"feature_based[{head.name}]", hp,
            functools.partial(_task_model_run, forward, frozen, fconfig, {**data, **labels}, d.rng),
            lambda dl, c: task_model_backward(dl, c),
            f"{features}: {shapes} L={fconfig.num_hidden_layers}", dict(data, **labels),
            golden=False)


def head_alone_cases(d: Dims, config, head_params, pool, rng) -> dict:
    """Each head of npbert/heads/ as a layer with its loss, on random encoder outputs x (the rows
    above reach them through the models too), named after its forward (sequence_head_forward:
    sequence_head). Not golden vectors, drawn from rng after every other case, so those stay as
    they were."""
    B, T, H, C = d.B, d.T, d.H, NUM_CHOICES
    cases = {}
    for name, head, k, targets in _head_rows(d, pool, rng):
        layer = head.forward.__name__.removesuffix("_forward") + ("[regression]" if name == head.regression else "")
        x_shape = (B, C, H) if head.choices else (B, T, H) if head.reads == TOKENS else (B, H)
        inputs = {"x": _normal(rng, *x_shape), **head_params(head, k)}
        cases[layer] = Case({n: np.asarray(v, d.dtype) for n, v in inputs.items()},
                            functools.partial(_head_run, head, config, targets, d.rng),
                            functools.partial(_head_backward, head),
                            f"({','.join(map(str, x_shape))}) -> loss", dict(targets), golden=False)
    return cases


def _task_model_run(forward, fixed, config, inputs, rng_of, p):
    """A model case's run: the loss of forward with p's parameters in place of fixed's."""
    return _loss_of(forward({**fixed, **p}, config, **inputs, rng=rng_of()))


def _head_run(head, config, targets, rng_of, p):
    """A head-alone case's run: the head's loss on the encoder output p["x"]."""
    return _loss_of(head.forward(p["x"], p, config, targets, rng_of(), NO_TRACE))


def _head_backward(head, dloss, cache):
    return _merge(head.backward(dloss, cache, NO_TRACE))


def _loss_of(out_and_cache):
    out, cache = out_and_cache
    return out["loss"], cache
