"""Gradient checking: every hand-written backward against central finite differences, in float64.

For an op y, cache = op_forward(inputs) we check the scalar f = sum(y * R) with a fixed random R,
so the analytic gradient is op_backward(R, cache); the numerical one perturbs each input
element by +-eps and takes (f(x+eps) - f(x-eps)) / 2 eps. Dropout draws from a Generator made
afresh from the same seed on every call, so every evaluation drops the same elements.

The error of one tensor is ||analytic - numerical|| / max(||analytic||, ||numerical||, 1): relative
for gradients of norm above 1, absolute below, because some gradients are exactly zero in
exact arithmetic (the key bias: softmax ignores a constant added to a row of scores) and
their finite differences are pure rounding noise (~1e-10). An op passes when the largest
error over its inputs is below `tol` (1e-6). Finite differences are only
trustworthy in float64: float32 paths are compared against float64 instead (tests/).

The hot ops (npbert.backend.HOT_OPS) are called through npbert.backend, so every row, not only
the composites, checks the backend in force: `npbert gradcheck --backend numba` checks the kernels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from npbert import backend, ops
from npbert.config import BertConfig
from npbert.model import init_params, pretraining_backward, pretraining_forward

EPS = 1e-6
TOL = 1e-6


def numerical_gradient(f, x, eps=EPS):
    """Central differences of the scalar f() with respect to every element of x (perturbed in place)."""
    grad = np.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)      # views: x must be contiguous
    assert np.shares_memory(flat, x), "numerical_gradient needs a contiguous array"
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        f_plus = f()
        flat[i] = old - eps
        f_minus = f()
        flat[i] = old
        gflat[i] = (f_plus - f_minus) / (2.0 * eps)
    return grad


def relative_error(a, b) -> float:
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), 1.0))


def scaled_error(got, exact, floor=0.0) -> float:
    """max |got - exact| / max(max |exact|, floor): a float32 result against the float64 answer,
    relative to the tensor's own scale, so an all-zero or mis-scaled tensor fails however small
    its entries (an elementwise relative error means nothing where entries cancel to ~0). floor:
    for a result that is 0 in exact arithmetic, both sides are rounding noise, measured against
    the size of the terms summed instead. 0 when both are exactly zero."""
    exact = np.asarray(exact, dtype=np.float64)
    scale = max(float(np.max(np.abs(exact), initial=0.0)), floor, np.finfo(np.float64).tiny)
    return float(np.max(np.abs(np.asarray(got, dtype=np.float64) - exact), initial=0.0)) / scale


def float32_errors(grads32: dict, grads64: dict) -> dict:
    """name -> scaled_error of each float32 gradient against the float64 one of the same model.
    A tensor whose float64 gradient is below 1e-10 of the model's largest is 0 in exact
    arithmetic (the key biases: softmax ignores a constant added to a row of scores; a bias
    under a softmax over positions or choices): its entries on both sides are rounding noise
    of sums of gradient-sized terms, so it is measured against the model's largest gradient."""
    largest = max(float(np.max(np.abs(g), initial=0.0)) for g in grads64.values())
    return {name: scaled_error(grads32[name], g64,
                               floor=largest if np.max(np.abs(g64), initial=0.0) <= 1e-10 * largest else 0.0)
            for name, g64 in grads64.items()}


@dataclass
class GradcheckResult:
    name: str
    shapes: str
    errors: dict = field(default_factory=dict)         # input name -> relative error
    tol: float = TOL

    @property
    def max_error(self) -> float:
        return max(self.errors.values(), default=0.0)

    @property
    def passed(self) -> bool:
        return all(math.isfinite(e) for e in self.errors.values()) and self.max_error < self.tol


def check(name, inputs, run, backward, shapes="", eps=EPS, tol=TOL, seed=0) -> GradcheckResult:
    """inputs: name -> float64 array to differentiate; run(inputs) -> (out, cache);
    backward(dout, cache) -> {name: gradient} for (at least) every key of inputs.
    A scalar output (a loss) is checked as it is; an array output through sum(out * R)."""
    out, cache = run(inputs)
    R = None if np.ndim(out) == 0 else np.random.default_rng(seed).standard_normal(np.shape(out))
    analytic = backward(1.0 if R is None else R, cache)

    def f():
        y, _ = run(inputs)
        return float(y) if R is None else float(np.sum(y * R))

    result = GradcheckResult(name, shapes, tol=tol)
    for key, x in inputs.items():
        result.errors[key] = relative_error(analytic[key], numerical_gradient(f, x, eps))
    return result


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


def _normal(rng, *shape):
    return rng.standard_normal(shape)


def _with_prefix(grads, prefix):
    return {prefix + k: v for k, v in grads.items()}


def op_cases(d: Dims):
    """name -> (inputs, run, backward, shapes) for every op, at the sizes in d (float64)."""
    rng = np.random.default_rng(d.seed)
    B, T, H, I, V, A = d.B, d.T, d.H, d.I, d.V, d.heads
    config = d.config()
    params = init_params(config, rng, np.float64)
    for k in params:                                   # make biases/LN non-trivial so they are tested
        params[k] = params[k] + 0.1 * _normal(rng, *params[k].shape) if params[k].ndim == 1 else params[k] * 10
    mask_bias = ops.attention_mask_bias(d.attention_mask(), np.float64)
    layer0 = ops.layer_params(params, 0)
    ids = rng.integers(0, V, (B, T))
    ids[0, :2] = ids[0, 0]                             # a repeated id: the scatter-add must accumulate
    types = rng.integers(0, 2, (B, T))
    positions = rng.choice(B * T, size=min(4, B * T), replace=False)
    positions[-1] = positions[0] if len(positions) > 1 else positions[-1]  # one position gathered twice
    cases = {}

    def add(name, inputs, run, backward, shapes):
        cases[name] = (inputs, run, backward, shapes)

    x = _normal(rng, B, T, H)
    add("linear", {"x": x, "w": _normal(rng, I, H), "b": _normal(rng, I)},
        lambda p: backend.linear_forward(p["x"], p["w"], p["b"]),
        lambda dy, c: dict(zip(("x", "w", "b"), backend.linear_backward(dy, c))), f"({B},{T},{H})->({B},{T},{I})")
    add("embedding", {"table": _normal(rng, V, H)},
        lambda p: backend.embedding_forward(ids, p["table"]),
        lambda dy, c: {"table": backend.embedding_backward(dy, c)}, f"ids ({B},{T}), table ({V},{H})")
    add("layernorm", {"x": _normal(rng, B, T, H), "gamma": 1 + _normal(rng, H), "beta": _normal(rng, H)},
        lambda p: backend.layernorm_forward(p["x"], p["gamma"], p["beta"], 1e-12),
        lambda dy, c: dict(zip(("x", "gamma", "beta"), backend.layernorm_backward(dy, c))), f"({B},{T},{H})")
    for act in ("gelu", "gelu_new"):
        add(f"gelu[{act}]", {"x": 2 * _normal(rng, B, T, I)},
            lambda p, act=act: backend.gelu_forward(p["x"], act),
            lambda dy, c: {"x": backend.gelu_backward(dy, c)}, f"({B},{T},{I})")
        add(f"linear_gelu[{act}]", {"x": x, "w": _normal(rng, I, H), "b": _normal(rng, I)},
            lambda p, act=act: backend.linear_gelu_forward(p["x"], p["w"], p["b"], act),
            lambda dy, c: dict(zip(("x", "w", "b"), backend.linear_gelu_backward(dy, c))),
            f"({B},{T},{H})->({B},{T},{I})")
    add("dropout", {"x": _normal(rng, B, T, H)},
        lambda p: backend.dropout_forward(p["x"], 0.3, np.random.default_rng(d.seed + 7)),
        lambda dy, c: {"x": backend.dropout_backward(dy, c)}, f"({B},{T},{H}) p=0.3")
    add("softmax", {"x": _normal(rng, B, A, T, T)},
        lambda p: ops.softmax_forward(p["x"]),
        lambda dy, c: {"x": ops.softmax_backward(dy, c)}, f"({B},{A},{T},{T})")
    qkv = {n: _normal(rng, B, A, T, d.head_size) for n in ("q", "k", "v")}
    add("attention_core", qkv,
        lambda p: backend.attention_core_forward(p["q"], p["k"], p["v"], mask_bias, d.dropout, d.rng()),
        lambda dy, c: dict(zip("qkv", backend.attention_core_backward(dy, c))), f"({B},{A},{T},{d.head_size})")
    attn_keys = [k for k in layer0 if k.startswith("attention.") and "LayerNorm" not in k]
    add("self_attention", {"x": x, **{k: layer0[k] for k in attn_keys}},
        lambda p: ops.self_attention_forward(p["x"], mask_bias, p, A, d.dropout, d.rng()),
        lambda dy, c: _merge(ops.self_attention_backward(dy, c)), f"({B},{T},{H}) heads={A}")
    ffn_keys = [k for k in layer0 if k.startswith(("intermediate.", "output.dense"))]
    add("feedforward", {"x": x, **{k: layer0[k] for k in ffn_keys}},
        lambda p: ops.feedforward_forward(p["x"], p, d.hidden_act),
        lambda dy, c: _merge(ops.feedforward_backward(dy, c)), f"({B},{T},{H})->({B},{T},{I})->({B},{T},{H})")
    add("encoder_layer", {"x": x, **layer0},
        lambda p: ops.encoder_layer_forward(p["x"], mask_bias, p, config, d.rng()),
        lambda dy, c: _merge(ops.encoder_layer_backward(dy, c)), f"({B},{T},{H})")
    enc = {k: v for k, v in params.items() if k.startswith("bert.encoder.")}
    add("encoder", {"x": x, **enc},
        lambda p: ops.encoder_forward(p["x"], mask_bias, p, config, d.rng()),
        lambda dy, c: _merge(ops.encoder_backward(dy, c)), f"{d.layers} layers ({B},{T},{H})")
    emb = {k: v for k, v in params.items() if k.startswith("bert.embeddings.")}
    add("bert_embeddings", emb,
        lambda p: ops.bert_embeddings_forward(ids, types, p, config, d.rng()),
        lambda dy, c: ops.bert_embeddings_backward(dy, c), f"ids ({B},{T}) -> ({B},{T},{H})")
    pool = {k: v for k, v in params.items() if k.startswith("bert.pooler.")}
    add("pooler", {"h": x, **pool},
        lambda p: ops.pooler_forward(p["h"], p),
        lambda dy, c: _merge(ops.pooler_backward(dy, c), "h"), f"({B},{T},{H})->({B},{H})")
    mlm = {k: v for k, v in params.items() if k.startswith("cls.predictions.")}
    mlm[ops.mlm_head.WORD] = params[ops.mlm_head.WORD]
    add("mlm_head", {"h": x, **mlm},
        lambda p: ops.mlm_head_forward(p["h"], positions, p, config),
        lambda dy, c: _merge(ops.mlm_head_backward(dy, c), "h"), f"({B},{T},{H}) at {len(positions)} positions -> ({len(positions)},{V})")
    nsp = {k: v for k, v in params.items() if k.startswith("cls.seq_relationship.")}
    add("nsp_head", {"pooled": _normal(rng, B, H), **nsp},
        lambda p: ops.nsp_head_forward(p["pooled"], p),
        lambda dy, c: _merge(ops.nsp_head_backward(dy, c), "pooled"), f"({B},{H})->({B},2)")
    labels = rng.integers(0, V, B * T)
    labels[::3] = ops.IGNORE_INDEX
    add("cross_entropy", {"logits": _normal(rng, B * T, V)},
        lambda p: backend.cross_entropy_forward(p["logits"], labels),
        lambda dl, c: {"logits": backend.cross_entropy_backward(dl, c)}, f"({B * T},{V}) ignore_index rows")
    batch = dict(input_ids=ids, token_type_ids=types, attention_mask=d.attention_mask(), mlm_positions=positions,
                 mlm_labels=rng.integers(0, V, len(positions)), nsp_labels=rng.integers(0, 2, B))
    add("bert_for_pretraining", dict(params),
        lambda p: _model_loss(p, config, batch, d.rng()),
        lambda dl, c: pretraining_backward(c, dl), f"L={d.layers} H={H} A={A} V={V} ({B},{T}) all params")
    cases.update(head_cases(d, params, batch, rng))
    return cases


def _merge(dx_and_grads, name="x"):
    dx, grads = dx_and_grads
    return {name: dx, **grads}


def _model_loss(params, config, batch, rng):
    out, cache = pretraining_forward(params, config, **batch, rng=rng)
    return out["loss"], cache


def run_gradchecks(d: Dims = None, names=None):
    """Check every op (or those in names) at sizes d; returns a list of GradcheckResult."""
    d = d or Dims()
    results = []
    for name, (inputs, run, backward, shapes) in op_cases(d).items():
        if names is None or name in names:
            results.append(check(name, inputs, run, backward, shapes, seed=d.seed))
    return results


# --- the fine-tuning heads (npbert/task_models.py) ------------------------------------------------------

NUM_LABELS, NUM_CHOICES = 3, 2


def head_cases(d: Dims, params, batch, rng):
    """The fine-tuning heads alone, then each whole model + head. The whole-model cases
    differentiate the head, the pooler (for the heads on the pooled output) and the word and
    token-type embeddings and their LayerNorm: the far end of the chain, where a wrong dh or
    dpooled shows. bert_for_pretraining checks every encoder parameter; tests/test_heads.py
    checks every parameter of each model + head once."""
    from npbert import task_models as tm
    B, T, H, K, C = d.B, d.T, d.H, NUM_LABELS, NUM_CHOICES
    config = d.config()
    cases = {}

    def add(name, inputs, run, backward, shapes):
        cases[name] = (inputs, run, backward, shapes)

    def head(kind, k):
        p = tm.init_head(config, kind, k, rng, np.float64)
        return {n: a * 10 if a.ndim == 2 else a + 0.1 * _normal(rng, *a.shape) for n, a in p.items()}

    cls = head("sequence_classification", K)
    add("classifier", {"x": _normal(rng, B, T, H), **cls},
        lambda p: ops.classifier_forward(p["x"], p, d.dropout, d.rng()),
        lambda dy, c: _merge(ops.classifier_backward(dy, c)), f"dropout, ({B},{T},{H})->({B},{T},{K})")
    qa = head("question_answering", 2)
    add("qa_head", {"h": _normal(rng, B, T, H), **qa},
        lambda p: ops.qa_head_forward(p["h"], p),
        lambda dy, c: _merge(ops.qa_head_backward(dy, c), "h"), f"({B},{T},{H})->({B},{T},2)")
    start, end = rng.integers(0, T, B), rng.integers(0, T, B)
    start[-1], end[0] = T + 2, -1                      # out of range: ignored, and clamped to [CLS]
    add("span_loss", {"logits": _normal(rng, B, T, 2)},
        lambda p: ops.span_loss_forward(p["logits"], start, end),
        lambda dl, c: {"logits": ops.span_loss_backward(dl, c)}, f"({B},{T},2) clamped positions")
    target = _normal(rng, B * T)
    add("mse", {"pred": _normal(rng, B * T)},
        lambda p: ops.mse_forward(p["pred"], target),
        lambda dl, c: {"pred": ops.mse_backward(dl, c)}, f"({B * T},)")

    base = {k: v for k, v in params.items() if not k.startswith("cls.")}
    far_end = [k for k in base if k.startswith("bert.embeddings.") and "position" not in k]
    inputs3 = {k: np.repeat(batch[k][:, None], C, axis=1) for k in ("input_ids", "token_type_ids", "attention_mask")}
    inputs3["input_ids"][:, 1] = rng.integers(0, d.V, (B, T))             # the choices differ
    token_labels = rng.integers(0, K, (B, T))
    token_labels[:, 0] = ops.IGNORE_INDEX
    models = [
        ("bert_for_sequence_classification", "sequence_classification", K,
         dict(labels=rng.integers(0, K, B)), f"({B},{T}) -> ({B},{K})"),
        ("bert_for_sequence_regression", "sequence_classification", 1,
         dict(labels=_normal(rng, B)), f"({B},{T}) -> ({B},1), MSE"),
        ("bert_for_token_classification", "token_classification", K,
         dict(labels=token_labels), f"({B},{T}) -> ({B},{T},{K})"),
        ("bert_for_question_answering", "question_answering", 2,
         dict(start_positions=start, end_positions=end), f"({B},{T}) -> ({B},{T},2)"),
        ("bert_for_multiple_choice", "multiple_choice", 1,
         dict(labels=rng.integers(0, C, B)), f"({B},{C},{T}) -> ({B},{C})"),
    ]
    for name, kind, k, labels, shapes in models:
        hp = head(kind, k)
        fixed = {**base, **hp}
        data = inputs3 if kind == "multiple_choice" else {k2: batch[k2] for k2 in inputs3}
        forward, backward = tm.MODELS[kind]
        pooler = [k2 for k2 in base if k2.startswith("bert.pooler.") and kind in ("sequence_classification",
                                                                                   "multiple_choice")]
        add(name, {k2: fixed[k2] for k2 in far_end + pooler + list(hp)},
            lambda p, fixed=fixed, data=data, labels=labels, forward=forward: _loss_of(
                forward({**fixed, **p}, config, **data, **labels, rng=d.rng())),
            lambda dl, c, backward=backward: backward(c, dl), f"{shapes} head,{'pooler,' if pooler else ''}emb")
    return cases


def _loss_of(out_and_cache):
    out, cache = out_and_cache
    return out["loss"], cache
