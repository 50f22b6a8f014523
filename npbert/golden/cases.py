"""The golden cases: every gradient-check case of BERT's (npbert/gradcheck/cases.py: each op, layer,
head and whole model; not npbert's own feature-based ones) run once, forward and backward, with
every tensor it reads or makes named by role.

The sizes are small and all different (B 3, T 7, A 2, head 5, H 10, I 13, V 17, P 9), so a
transposed weight or a swapped axis cannot pass by accident; rows are padded (lengths 7, 4, 5)
with [PAD] at the padded positions, an id repeats, one MLM label is -100, and dropout is off
(the dropout op alone gets its keep mask as an input, which its constants also determine; the
dropout_uniforms case is the generator itself) but in bert_for_pretraining[dropout]: the same
model, parameters and batch with hidden and attention-probability dropout on, its keys those of
one training step, so a port's dropout calls, keys and indices show at the first intermediate
they reach. float32 cases hold the same numbers rounded, run by npbert in float32 (NumPy backend).
"""
from __future__ import annotations

import dataclasses
import zlib
from typing import NamedTuple

import numpy as np

from npbert.backend import use_backend
from npbert.gradcheck.cases import Case, Dims, ModelCall, op_cases
from npbert.gradcheck.checker import zero_gradient_floors
from npbert.ops import DropoutCache
from npbert.ops.dropout import DropoutStream, dropout_uniforms
from npbert.trace import Trace

GOLDEN_DIMS = dict(B=3, T=7, heads=2, head_size=5, I=13, V=17, layers=2, lengths=(7, 4, 5))
DTYPES = ("float64", "float32")
PARAM_NAMES = ("w", "b", "gamma", "beta", "table")    # an op's parameters; layers and models use HF names

# What each case computes, for a porter reading the manifest (each op's page: docs/layers/).
DESCRIPTIONS = {
    "linear": "y = x w^T + b",
    "embedding": "out = table[ids]; the table's gradient is a scatter-add (a repeated id accumulates)",
    "embedding[padding_idx]": "out = table[ids]; row padding_idx gets no gradient (it holds [PAD], also at one real position)",
    "layernorm": "y = (x - mean) / sqrt(var + eps) * gamma + beta over the last axis, eps 1e-12",
    "gelu[gelu]": "exact GELU: x/2 (1 + erf(x / sqrt 2))",
    "gelu[gelu_new]": "tanh GELU: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))",
    "linear_gelu[gelu]": "exact GELU of (x w^T + b)",
    "linear_gelu[gelu_new]": "tanh GELU of (x w^T + b)",
    "dropout": "y = x * keep / (1 - p), p = 0.3, keep given; keep is also u(key, i) >= p for i the flat index "
               "into x and key that of call `call` of step `step` of DropoutStream(dropout_seed) (constants; see "
               "dropout_uniforms)",
    "dropout_uniforms": "the counter-based dropout generator: keys[k] = splitmix64(splitmix64(dropout_seed, step), k) "
                        "for calls k = 0, 1, ...; u[k, j] = (splitmix64(keys[k], index[j]) >> 40) / 2^24; "
                        "keep[k, j] = u[k, j] >= p; splitmix64(s, n) = mix64(s + (n + 1) 0x9E3779B97F4A7C15) mod 2^64, "
                        "mix64(z): z = (z ^ z >> 30) 0xBF58476D1CE4E5B9; z = (z ^ z >> 27) 0x94D049BB133111EB; "
                        "z ^ z >> 31",
    "softmax": "softmax over the last axis",
    "attention_core": "softmax(q k^T / sqrt(D) + mask_bias[:, None, None, :]) v, per head; q, k, v (B, A, T, D)",
    "self_attention": "BertSelfAttention + output dense: heads split, attention core, heads merged, dense (no residual)",
    "feedforward": "output.dense(gelu(intermediate.dense(x))) (no residual)",
    "encoder_layer": "post-LN layer: h = LN(x + attention(x)); y = LN(h + feedforward(h))",
    "encoder": "the encoder layers in order",
    "bert_embeddings": "LayerNorm(word[input_ids] + position[0..T-1] + token_type[token_type_ids]); the word "
                       "lookup gives row pad_token_id no gradient ([PAD] also sits at one real position)",
    "pooler": "tanh(h[:, 0] W^T + b)",
    "mlm_head": "at flat positions of h: LayerNorm(gelu(dense)) then the tied decoder (word table) + bias; a position repeats",
    "nsp_head": "pooled W^T + b: IsNext, NotNext",
    "cross_entropy": "mean cross-entropy over rows whose label is not -100",
    "bert_for_pretraining": "BertForPreTraining: MLM at mlm_positions + NSP, loss = mlm_loss + nsp_loss",
    "bert_for_pretraining[dropout]": "bert_for_pretraining's model, parameters and batch with dropout on as in training "
                                     "step `step` of DropoutStream(dropout_seed): the calls in constants.dropout.calls, "
                                     "in that order, call k keyed splitmix64(splitmix64(dropout_seed, step), k), each "
                                     "keeping u(key, i) >= its p at flat index i (see dropout_uniforms)",
    "classifier": "logits = x W^T + b (dropout off)",
    "qa_head": "qa_outputs: (B, T, H) -> (B, T, 2), start and end scores",
    "span_loss": "(CE(start scores, start) + CE(end scores, end)) / 2; positions clamped into [0, T], T ignored",
    "mse": "mean((pred - target)^2)",
    "bert_for_sequence_classification": "BertForSequenceClassification, 3 labels: classifier on the pooled output",
    "bert_for_sequence_regression": "BertForSequenceClassification, num_labels 1: MSE on the pooled output",
    "bert_for_token_classification": "BertForTokenClassification, 3 labels, -100 at [CLS] and padding",
    "bert_for_question_answering": "BertForQuestionAnswering: span loss over every position",
    "bert_for_multiple_choice": "BertForMultipleChoice, 2 choices run as B*C sequences, scores (B, C)",
}
# Dropout as the model's dropout cases run it: the two probabilities unequal (a port that swaps them
# fails), keyed as training step 3 (a key that leaves the step out, or takes step 0, differs).
DROPOUT = dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.2)
DROPOUT_STEP = 3
DERIVED = ("mlm_predictions",)     # outputs that are the argmax of another (mlm_logits): not BERT's, not golden
OPS = ("linear", "embedding", "layernorm", "gelu", "linear_gelu", "dropout", "dropout_uniforms", "softmax",
       "attention_core", "cross_entropy", "mse", "span_loss")


class GoldenCase(NamedTuple):
    name: str
    dtype: str
    kind: str                      # op, layer, model, generator (or tokenizer / checkpoint: real_model.py)
    description: str
    constants: dict                # scalars the computation reads: eps, p, hidden_act, padding_idx, ...
    tensors: dict                  # name -> (role, array), in the order a porter meets them
    forward_order: list            # whole models: the trace's names, in the order the forward made them
    backward_order: list           # whole models: grad/<name> in the order the backward made them
    floors: dict = {}              # grad name -> the scale its error is measured against, if 0 in exact arithmetic


def golden_dims(seed: int = 0, dtype: str = "float64") -> Dims:
    return Dims(**GOLDEN_DIMS, seed=seed, dtype=np.dtype(dtype).type)


def golden_cases(seed: int = 0, dtypes=DTYPES, names=None) -> list:
    """Every case (or those named) in each dtype, computed by npbert on the NumPy backend. A
    gradient that is 0 in exact arithmetic (a key bias's: softmax ignores a constant added to a
    row of scores) is rounding noise in both a port and the golden, so it is measured against
    the case's largest gradient (its floor), found in float64 and used for every dtype."""
    out, floors = [], {}
    with use_backend("numpy"):
        for dtype in sorted(set(dtypes) | {"float64"}, key=DTYPES.index):
            cases = op_cases(golden_dims(seed, dtype))
            for name in ([n for n in cases if cases[n].golden] + [DROPOUT_MODEL] if names is None else names):
                case = golden_case(name, cases[name], dtype, seed) if name != DROPOUT_MODEL else \
                    dropout_model_case(cases["bert_for_pretraining"].model, dtype, seed)
                if name == "dropout" and dtype in dtypes:
                    out.append(dropout_uniforms_case(seed, dtype))
                if dtype == "float64":
                    grads = {k: v for k, (role, v) in case.tensors.items() if role in ("grad", "intermediate_grad")}
                    floors[name] = {k: f for k, f in zero_gradient_floors(grads).items() if f}
                if dtype in dtypes:
                    out.append(case._replace(floors=floors[name]))
    return out


DROPOUT_MODEL = "bert_for_pretraining[dropout]"


def with_dropout(model: ModelCall) -> ModelCall:
    """A whole-model case's ModelCall with hidden and attention-probability dropout on (DROPOUT)."""
    return model._replace(config=dataclasses.replace(model.config, **DROPOUT))


def dropout_model_case(model: ModelCall, dtype: str, seed: int, step: int = DROPOUT_STEP) -> GoldenCase:
    """The whole pretraining model traced with dropout on, its keys those of training step `step`."""
    model = with_dropout(model)
    tensors, forward_order, backward_order = model_tensors(model, DropoutStream(seed, step))
    constants = {"dropout": dropout_constants(model.config, seed, step)}
    return GoldenCase(DROPOUT_MODEL, dtype, "model", DESCRIPTIONS[DROPOUT_MODEL], constants, tensors, forward_order,
                      backward_order)


def dropout_calls(config, classifier: str | None = None) -> list:
    """The dropout calls of one forward, in the order the model makes them (call k is the list's k-th,
    from 0), each with what it drops, the flat index of an element and the first traced name it
    reaches; classifier: the trace name of a task head's classifier, whose input is dropped last."""
    hidden = ("(B, T, H)", "(b*T + t)*H + h")
    calls = [("the embeddings' LayerNorm output", *hidden, "bert.embeddings")]
    for i in range(config.num_hidden_layers):
        layer = f"bert.encoder.layer.{i}"
        calls += [(f"{layer}'s attention probabilities, before they weight the values", "(B, A, T, T)",
                   "((b*A + a)*T + query)*T + key", f"{layer}.attention.self"),
                  (f"{layer}'s attention output (attention.output.dense), before the residual sum", *hidden,
                   f"{layer}.attention.output.sum"),
                  (f"{layer}'s feed-forward output (output.dense), before the residual sum", *hidden,
                   f"{layer}.output.sum")]
    if classifier:
        calls.append(("the pooled output, the classifier's input", "(B, H)", "b*H + h", classifier))
    return [dict(zip(("drops", "shape", "index", "first_seen_at"), c)) for c in calls]


def dropout_constants(config, seed: int, step: int | None = None, classifier: str | None = None) -> dict:
    """What a port needs to drop what npbert drops: the probabilities, the seed, the step (a training
    case: every step its own) and the calls in order."""
    return {"hidden_dropout_prob": config.hidden_dropout_prob,
            "attention_probs_dropout_prob": config.attention_probs_dropout_prob, "dropout_seed": seed, **({"step": step} if step is not None else {}),
            "keys": "call k (from 0, in the order of calls) of step s (updates done before it) is keyed "
                    "splitmix64(splitmix64(dropout_seed, s), k); it keeps element i iff u(key, i) >= p, u and p "
                    "compared as doubles (whatever the case's dtype), and multiplies what it keeps by 1 / (1 - p), "
                    "computed in double and rounded to the case's dtype",
            "p": "hidden_dropout_prob for every call but the attention probabilities', which take "
                 "attention_probs_dropout_prob",
            "calls": dropout_calls(config, classifier)}


def dropout_uniforms_case(seed: int, dtype: str, step: int = 3, calls: int = 3, p_drop: float = 0.1) -> GoldenCase:
    """The dropout generator (npbert/ops/dropout.py) alone: the keys of a step's first calls and the
    uniforms and keep masks at indices small and large (past 2^32), so a port can test its own."""
    rng = np.random.default_rng([seed, zlib.crc32(b"dropout_uniforms")])
    index = np.concatenate([np.arange(40), rng.integers(0, 2 ** 40, 24)]).astype(np.int64)     # (n,)
    stream = DropoutStream(seed, step)
    keys = np.array([stream.next_key() for _ in range(calls)], np.uint64)                       # (calls,)
    u = np.stack([dropout_uniforms(k, index) for k in keys])                                    # (calls, n)
    tensors = {"index": ("input", index), "keys": ("output", keys), "u": ("output", u.astype(dtype)),
               "keep": ("output", u >= p_drop)}
    return GoldenCase("dropout_uniforms", dtype, "generator", DESCRIPTIONS["dropout_uniforms"],
                      dict(dropout_seed=seed, step=step, p=p_drop), tensors, [], [])


def golden_case(name: str, case: Case, dtype: str, seed: int) -> GoldenCase:
    base = name.split("[")[0]
    if case.model is not None:
        tensors, forward_order, backward_order = model_tensors(case.model)
        kind, constants = "model", {}
    else:
        tensors, forward_order, backward_order = op_tensors(name, case, seed), [], []
        kind = "op" if base in OPS else "layer"
        constants = {k: v for k, v in case.fixed.items() if not isinstance(v, np.ndarray)}
    return GoldenCase(name, dtype, kind, DESCRIPTIONS[name], constants, tensors, forward_order, backward_order)


def op_tensors(name: str, case: Case, seed: int) -> dict:
    """An op or layer: its inputs and parameters, the output, the upstream gradient (random, seeded by
    the case's name; 1 for a loss) and the gradient of every input and parameter."""
    tensors = {k: ("param" if k in PARAM_NAMES or "." in k else "input", v) for k, v in case.inputs.items()}
    tensors.update({k: ("input", v) for k, v in case.fixed.items() if isinstance(v, np.ndarray)})
    out, cache = case.run({k: v.copy() for k, v in case.inputs.items()})
    if isinstance(cache, DropoutCache):                # the mask the op drew, so a port can apply it
        tensors["keep"] = ("input", cache.keep)
    out = np.asarray(out)
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    upstream = np.asarray(1.0 if out.ndim == 0 else rng.standard_normal(out.shape), out.dtype)
    grads = case.backward(upstream, cache)
    tensors["out"] = ("output", out)
    tensors["grad/out"] = ("upstream", upstream)
    tensors.update({"grad/" + k: ("grad", np.asarray(grads[k])) for k in case.inputs})
    return tensors


def model_tensors(m: ModelCall, rng=None) -> tuple:
    """A whole model, traced: inputs, every parameter, the outputs, d loss / d loss = 1, every
    parameter's gradient, and every named intermediate and its gradient (docs/model.md).
    rng: its dropout (a DropoutStream), or None for none."""
    trace = Trace()
    out, cache = m.forward(m.params, m.config, **m.inputs, rng=rng, trace=trace)
    grads = m.backward(cache)
    dtype = m.params["bert.embeddings.word_embeddings.weight"].dtype
    outputs = {k: ("output", np.asarray(v)) for k, v in out.items()
               if v is not None and k not in m.inputs and k not in DERIVED}
    tensors = {k: ("input", np.asarray(v)) for k, v in m.inputs.items()}          # in the order a port meets them:
    tensors.update({k: ("param", v) for k, v in m.params.items()})
    tensors.update({k: ("intermediate", v) for k, v in trace.forward.items() if k not in outputs})  # the forward,
    tensors.update(outputs)
    tensors["grad/loss"] = ("upstream", np.asarray(1.0, dtype))
    tensors.update({"grad/" + k: ("intermediate_grad", g) for k, g in trace.backward.items()})    # the backward,
    tensors.update({"grad/" + k: ("grad", g) for k, g in grads.items()})                          # its results
    return tensors, trace.names(), ["grad/" + k for k in trace.backward]
