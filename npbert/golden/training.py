"""Golden training steps: K updates of the golden model (the same sizes, parameters and batch as
the whole-model cases) run by npbert's own training step (npbert/training/loop.py `update`: the
warmup + linear-decay schedule, clipping by the global norm, AdamW with its weight-decay
exclusions), for pretraining (MLM + NSP) and for one fine-tuning head, with bias correction on
and off and dropout off, and with bias correction and dropout on (each step's dropout
DropoutStream(seed, step), as `npbert pretrain` and `npbert finetune` draw it). The same batch is
used at every step.

Recorded, per step: the loss, the global gradient norm before clipping and the learning rate
(required), and every parameter's gradient before clipping, both AdamW moments and the
parameter after the update (optional, for locating where a port first goes wrong); after the
last step every parameter and both moments (required). [PAD] (id 0) also sits at one real
position, so the lookup must give its row no gradient while the tied decoder still does.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from npbert.backend import use_backend
from npbert.golden.cases import GoldenCase, dropout_constants, golden_dims, with_dropout
from npbert.gradcheck.cases import op_cases
from npbert.gradcheck.checker import zero_gradient_floors
from npbert.ops.dropout import DropoutStream
from npbert.optim import AdamW
from npbert.training.loop import Schedule, update

# The recipe: 2 warmup steps (lr 0 at the first update, as transformers' schedule), decay to 0 at
# step 6, so every update after the first moves. max_grad_norm 1.1 clips at some steps and not at
# others, never within 5% of the threshold (tests/golden/test_training_goldens.py checks both).
RECIPE = dict(steps=5, warmup_steps=2, total_steps=6, peak_lr=0.01, max_grad_norm=1.1, weight_decay=0.01,
              betas=(0.9, 0.999), eps=1e-6)
MODELS = {"pretraining": "bert_for_pretraining", "sequence_classification": "bert_for_sequence_classification"}
PAD_AT = (0, 2)                                        # (row, position) of a real token that is [PAD]
CLASSIFIERS = {"pretraining": None, "sequence_classification": "classifier"}   # a head's dropped input: its trace name


def frozen(name: str) -> bool:
    """Not in the optimizer: the attention key biases, whose gradient is 0 in exact arithmetic (softmax
    ignores a constant added to a row of scores). Adam divides a gradient by its own size, so it
    would turn their rounding noise into steps of up to lr, different in every implementation."""
    return name.endswith("attention.self.key.bias")


def training_case_name(model: str, bias_correction: bool, dropout: bool = False) -> str:
    return f"train[{model},{'dropout' if dropout else 'bias_correction' if bias_correction else 'no_bias_correction'}]"


def training_constants(bias_correction: bool, dropout=0.0) -> dict:
    """The recipe, for the manifest; dropout: 0.0 (off) or what dropout_constants says of it."""
    r = RECIPE
    return {"frozen": "every attention.self.key.bias: not updated, no moments (its gradient is 0 in exact "
                      "arithmetic, and Adam would turn its rounding noise into steps of up to lr)",
            **{k: list(v) if isinstance(v, tuple) else v for k, v in r.items()}, "bias_correction": bias_correction,
            "schedule": "lr(s) = peak_lr * s / warmup_steps for 0-based update s < warmup_steps, else "
                        "peak_lr * max(0, (total_steps - s) / (total_steps - warmup_steps))",
            "clip": "before the update: every gradient scaled by max_grad_norm / norm when the global norm of all "
                    "gradients (one vector) exceeds max_grad_norm (TensorFlow's clip_by_global_norm; PyTorch's "
                    "clip_grad_norm_ divides by norm + 1e-6, which float64 tolerance sees); the norm takes every "
                    "gradient the loss gives, the frozen key biases' included; theirs is rounding noise (under 1e-17 "
                    "of the squared norm in float32, 1e-34 in float64), so leaving them out passes too",
            "adamw": "m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; p -= lr (m_hat / (sqrt(v_hat) + eps) + "
                     "wd p), m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t) with bias correction, else m, v; t is "
                     "the 1-based number of the update, the first (lr 0) update included: t = 1 at step 1",
            "no_decay": "weight_decay is 0 for every name ending in .bias or containing LayerNorm",
            "dropout": dropout, "same_batch_every_step": True, "pad_token_id": 0,
            "pad_at": f"input_ids{list(PAD_AT)} is [PAD] at a real position: padding_idx gives its row no lookup "
                      "gradient (the tied decoder and weight decay still move it)"}


def train_steps(model, bias_correction: bool, recipe=RECIPE, dropout_seed=None) -> dict:
    """Run recipe["steps"] updates of a whole-model case's ModelCall with npbert's own step ->
    {loss, grad_norm, lr: (K,)} and {grad, m, v, param: {name: (K, *shape)}} per step.
    dropout_seed: None for no dropout, else step s drops with DropoutStream(dropout_seed, s)."""
    params = {k: v.copy() for k, v in model.params.items()}
    schedule = Schedule(recipe["total_steps"], recipe["warmup_steps"], recipe["peak_lr"], recipe["max_grad_norm"])
    trained = {k: v for k, v in params.items() if not frozen(k)}
    state = SimpleNamespace(params=params, position=SimpleNamespace(step=0), optimizer=AdamW(trained, recipe["weight_decay"], recipe["betas"], recipe["eps"],
                                            bias_correction))
    state.dropout = lambda: None if dropout_seed is None else DropoutStream(dropout_seed, state.position.step)
    raw = {}                                           # the gradients before clipping (it scales them in place)

    def backward(cache):
        grads = model.backward(cache)
        raw.update({k: g.copy() for k, g in grads.items()})
        return grads
    job = SimpleNamespace(forward=lambda p, batch, rng: model.forward(p, model.config, **batch, rng=rng),
                          backward=backward)
    series = {"loss": [], "grad_norm": [], "lr": []}
    stores = (("grad", raw), ("m", state.optimizer.m), ("v", state.optimizer.v), ("param", params))
    steps = {kind: {k: [] for k in params if k in store or kind in ("grad", "param")} for kind, store in stores}
    for s in range(recipe["steps"]):
        state.position.step = s
        out, lr, norm = update(job, state, schedule, model.inputs)
        for key, value in (("loss", out["loss"]), ("grad_norm", norm), ("lr", lr)):
            series[key].append(value)
        for kind, store in stores:
            for k in steps[kind]:
                steps[kind][k].append(store[k].copy())
    dtype = params["bert.embeddings.word_embeddings.weight"].dtype
    return ({k: np.asarray(v, dtype) for k, v in series.items()},
            {kind: {k: np.stack(v) for k, v in per.items()} for kind, per in steps.items()})


DESCRIPTIONS = {
    "pretraining": "BertForPreTraining (MLM + NSP, loss = mlm_loss + nsp_loss)",
    "sequence_classification": "BertForSequenceClassification, 3 labels (classifier on the pooled output)",
}


def golden_model(name: str, dtype: str, seed: int):
    """A whole-model case's ModelCall (the goldens' sizes, parameters and batch) with [PAD] at one real
    position, so that its row's lookup gradient, which padding_idx drops, is not 0 by accident."""
    model = op_cases(golden_dims(seed, dtype))[name].model
    inputs = {k: np.array(v) for k, v in model.inputs.items()}
    inputs["input_ids"][PAD_AT] = model.config.pad_token_id
    return model._replace(inputs=inputs)


# (bias correction, dropout) of each model's cases: the optimizer's two settings without dropout,
# and dropout on (with bias correction, the default of npbert's and PyTorch's AdamW)
SETTINGS = ((True, False), (False, False), (True, True))


def training_cases(seed: int = 0, dtypes=("float64", "float32")) -> list:
    """A GoldenCase per model, setting and dtype: the batch and initial parameters (inputs), the
    per-step series and tensors, the final parameters and moments. A gradient that is 0 in exact
    arithmetic is measured against its floor, found in float64 (as in cases.py)."""
    out, floors = [], {}
    with use_backend("numpy"):
        for dtype in ("float64",) + tuple(d for d in dtypes if d != "float64"):
            for kind, name in MODELS.items():
                for bias_correction, dropout in SETTINGS:
                    model = golden_model(name, dtype, seed)
                    model = with_dropout(model) if dropout else model
                    series, steps = train_steps(model, bias_correction, dropout_seed=seed if dropout else None)
                    case = training_case_name(kind, bias_correction, dropout)
                    if dtype == "float64":
                        grads = {"steps/grad/" + k: g for k, g in steps["grad"].items()}
                        floors[case] = {k: f for k, f in zero_gradient_floors(grads).items() if f}
                    if dtype in dtypes:
                        constants = training_constants(bias_correction, dropout_constants(
                            model.config, seed, classifier=CLASSIFIERS[kind]) if dropout else 0.0)
                        out.append(GoldenCase(case, dtype, "training", training_description(kind, bias_correction,
                                                                                            dropout),
                                              constants, training_tensors(model, series, steps), [], [], floors[case]))
    return out


def training_description(kind: str, bias_correction: bool, dropout: bool) -> str:
    return f"{RECIPE['steps']} training steps of {DESCRIPTIONS[kind]}, AdamW bias correction " \
           f"{'on' if bias_correction else 'off'}" + (", dropout on (constants.dropout)" if dropout else "")


def training_tensors(model, series, steps) -> dict:
    """name -> (role, array): the batch and initial parameters, the per-step series and tensors, the
    final parameters and moments."""
    tensors = {k: ("input", np.asarray(v)) for k, v in model.inputs.items()}
    tensors.update({k: ("param", v) for k, v in model.params.items()})
    tensors.update({k: ("step", v) for k, v in series.items()})
    for k in model.params:
        tensors["trained/" + k] = ("final", steps["param"][k][-1])
    for moment in ("m", "v"):
        tensors.update({f"{moment}/{k}": ("final", a[-1]) for k, a in steps[moment].items()})
    for what in ("grad", "m", "v", "param"):
        tensors.update({f"steps/{what}/{k}": ("step_tensor", a) for k, a in steps[what].items()})
    return tensors
