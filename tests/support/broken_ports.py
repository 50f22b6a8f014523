"""Ports of BERT built from npbert's own functions: the correct one, and each common porting bug
put in on purpose. tests/golden/test_model_goldens.py runs each against the goldens through `conform`, and the
table of symptoms in docs/porting.md is this file's output:

    python tests/support/broken_ports.py      # prints the markdown table (writes goldens to a temp dir)

A port here is npbert computing every golden case again (npbert.golden.cases) with one function
swapped, and writing the compared tensors where a port would (RESULTS_DIR/<dtype>/<case>...).
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from unittest import mock

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from npbert import backend, model, safetensors  # noqa: E402
from npbert.golden import conform, schema  # noqa: E402
from npbert.layers import layout  # noqa: E402
from npbert import optim  # noqa: E402
from npbert.golden.cases import DROPOUT_MODEL  # noqa: E402
from npbert.golden.training import training_cases  # noqa: E402
from npbert.golden.write import case_file, default_cases, write_goldens  # noqa: E402
from npbert.training import loop  # noqa: E402
from npbert.ops import attention_core as attention_core_op  # noqa: E402
from npbert.ops import dropout as dropout_op  # noqa: E402
from npbert.ops import embedding as embedding_op  # noqa: E402
from npbert.ops.softmax import softmax_forward  # noqa: E402

WORD = "bert.embeddings.word_embeddings.weight"


def write_port_results(results_dir, seed=0, as_npy=(), make_cases=default_cases):
    """Run every golden case (or those make_cases(seed) makes) with npbert as it is (whatever is
    patched now) and write the compared tensors; cases whose name is in as_npy go out as one .npy
    per tensor instead of safetensors."""
    for case in make_cases(seed):
        tensors = {k: v for k, (role, v) in case.tensors.items() if role in schema.REQUIRED + schema.OPTIONAL}
        path = os.path.join(results_dir, case_file(case))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if case.name in as_npy:
            for name, v in tensors.items():
                npy = os.path.join(path[:-len(".safetensors")], name + ".npy")
                os.makedirs(os.path.dirname(npy), exist_ok=True)
                np.save(npy, v)
        else:
            safetensors.save_file(tensors, path)


# --- the bugs: each a patch of one npbert function -------------------------------------------------

def _eps_1e5():
    real = backend.layernorm_forward
    return mock.patch.object(backend, "layernorm_forward", lambda x, g, b, eps: real(x, g, b, 1e-5))


def _tanh_gelu():
    gelu, linear_gelu = backend.gelu_forward, backend.linear_gelu_forward
    return _all(mock.patch.object(backend, "gelu_forward", lambda x, act: gelu(x, "gelu_new")),
                mock.patch.object(backend, "linear_gelu_forward",
                                  lambda x, w, b, act: linear_gelu(x, w, b, "gelu_new")))


def _mask_minus_10000():
    def mask_bias(attention_mask, dtype):
        return np.where(np.asarray(attention_mask) == 1, 0.0, -10000.0).astype(dtype)
    return _all(mock.patch.object(layout, "attention_mask_bias", mask_bias),
                mock.patch("npbert.ops.attention_mask_bias", mask_bias))


def _untied_decoder():
    real = model.mlm_head_backward

    def mlm_head_backward(dlogits, cache, trace):          # the decoder's gradient goes to a weight of its own
        dh, grads = real(dlogits, cache, trace)
        grads[WORD] = np.zeros_like(grads[WORD])
        return dh, grads
    return mock.patch.object(model, "mlm_head_backward", mlm_head_backward)


def _in_out_layout():
    def as_in_out(w):                                      # HF's (out, in) bytes read as an (in, out) matrix
        return np.ascontiguousarray(w.reshape(w.shape[::-1]).T)
    linear, linear_gelu = backend.linear_forward, backend.linear_gelu_forward
    return _all(mock.patch.object(backend, "linear_forward", lambda x, w, b: linear(x, as_in_out(w), b)),
                mock.patch.object(backend, "linear_gelu_forward",
                                  lambda x, w, b, act: linear_gelu(x, as_in_out(w), b, act)))


def _softmax_over_queries():
    def softmax_wrong_axis(x):
        y, cache = softmax_forward(x.swapaxes(-1, -2))
        return y.swapaxes(-1, -2), cache
    return mock.patch.object(attention_core_op, "softmax_forward", softmax_wrong_axis)


def _pad_row_gets_gradient():
    return _all(mock.patch.object(embedding_op, "without_padding_row", lambda dtable, cache: dtable),
                mock.patch("npbert.kernels.embedding.without_padding_row", lambda dtable, cache: dtable))


def _calls_from_one():
    def next_key(self):                                    # call k keyed as call k + 1
        self.calls += 1
        return int(dropout_op.splitmix64(np.uint64(self.step_key), self.calls))
    return mock.patch.object(dropout_op.DropoutStream, "next_key", next_key)


def _step_key(step_key):
    """A DropoutStream whose step key is step_key(seed, step) instead of splitmix64(seed, step)."""
    real = dropout_op.DropoutStream.__init__

    def __init__(self, seed, step):
        real(self, seed, step)
        self.step_key = step_key(seed, step)
    return mock.patch.object(dropout_op.DropoutStream, "__init__", __init__)


def _step_left_out():                                      # call k keyed splitmix64(seed, k)
    return _step_key(lambda seed, step: seed % 2 ** 64)


def _every_step_as_step_0():                               # one set of masks for the whole run
    return _step_key(lambda seed, step: int(dropout_op.splitmix64(np.uint64(seed % 2 ** 64), 0)))


def _probs_indexed_by_key_then_query():
    def dropout_forward(x, p_drop, rng):                   # x: (B, A, T, T); index ((b*A + a)*T + key)*T + query
        y, cache = dropout_op.dropout_forward(x.swapaxes(-1, -2), p_drop, rng)
        keep = None if cache.keep is None else cache.keep.swapaxes(-1, -2)
        return y.swapaxes(-1, -2), cache._replace(keep=keep)
    return mock.patch.object(attention_core_op, "dropout_forward", dropout_forward)


@contextlib.contextmanager
def _all(*patches):
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        yield


# bug -> (how it is made, the whole-model case that shows it, where it must first differ)
BROKEN = {
    "LayerNorm eps 1e-5": (_eps_1e5, "bert_for_pretraining", "bert.embeddings.LayerNorm"),
    "tanh GELU where the config says exact": (_tanh_gelu, "bert_for_pretraining", "bert.encoder.layer.0.intermediate"),
    "mask value -10000 instead of finfo.min": (_mask_minus_10000, "bert_for_pretraining", "bert.mask_bias"),
    "MLM decoder untied": (_untied_decoder, "bert_for_pretraining", "grad/" + WORD),
    "weights read in (in, out) layout": (_in_out_layout, "bert_for_pretraining",
                                         "bert.encoder.layer.0.attention.self.query"),
    "softmax over the query axis": (_softmax_over_queries, "bert_for_pretraining",
                                    "bert.encoder.layer.0.attention.self.probs"),
    "[PAD] row's gradient not zeroed": (_pad_row_gets_gradient, "bert_for_question_answering", "grad/" + WORD),
    "dropout calls numbered from 1": (_calls_from_one, DROPOUT_MODEL, "bert.embeddings"),
    "the step left out of the dropout keys": (_step_left_out, DROPOUT_MODEL, "bert.embeddings"),
    "every step's dropout keyed as step 0's": (_every_step_as_step_0, DROPOUT_MODEL, "bert.embeddings"),
    "attention probabilities dropped at index (b, a, key, query)": (_probs_indexed_by_key_then_query, DROPOUT_MODEL,
                                                                    "bert.encoder.layer.0.attention.self"),
}
DROPOUT_BUGS = [bug for bug, (_, case, _) in BROKEN.items() if case == DROPOUT_MODEL]


# --- broken optimizers: each a patch of one of npbert's training functions --------------------------

def _decay_everything():
    return mock.patch.object(optim, "decays", lambda name: True)


def _bias_correction(on: bool):
    """An optimizer that always (on) or never applies bias correction, whatever the case asks."""
    real = optim.AdamW.step

    def step(self, params, grads, lr):
        asked, self.bias_correction = self.bias_correction, on
        try:
            real(self, params, grads, lr)
        finally:
            self.bias_correction = asked
    return mock.patch.object(optim.AdamW, "step", step)


def _adam_l2():
    """torch.optim.Adam(weight_decay=wd): wd * p added to the (clipped) gradient, so it enters the
    moments, instead of AdamW's decay of the parameter itself."""
    real = optim.AdamW.step

    def step(self, params, grads, lr):
        for k in self.m:
            if optim.decays(k):
                grads[k] += grads[k].dtype.type(self.weight_decay) * params[k]
        decay, self.weight_decay = self.weight_decay, 0.0
        try:
            real(self, params, grads, lr)
        finally:
            self.weight_decay = decay
    return mock.patch.object(optim.AdamW, "step", step)


def _lr_one_step_late():
    return mock.patch.object(loop.Schedule, "lr", lambda self, step: optim.linear_warmup_decay(
        step + 1, self.peak_lr, self.warmup_steps, self.total_steps))


def _no_clipping():
    return mock.patch.object(loop, "clip_by_global_norm", lambda grads, max_norm: optim.global_norm(grads))


def _clipping_after_the_update():
    real = optim.AdamW.step

    def step(self, params, grads, lr):                     # the update reads the gradients unclipped ...
        real(self, params, grads, lr)
        optim.clip_by_global_norm(grads, 1.1)              # ... and they are clipped when nothing reads them
    return _all(_no_clipping(), mock.patch.object(optim.AdamW, "step", step))


def _torch_clip_grad_norm():
    def clip(grads, max_norm):                             # torch.nn.utils.clip_grad_norm_: norm + 1e-6
        norm = optim.global_norm(grads)
        if norm > max_norm:
            for g in grads.values():
                g *= g.dtype.type(max_norm / (norm + 1e-6))
        return norm
    return mock.patch.object(loop, "clip_by_global_norm", clip)


TRAIN = "train[pretraining,bias_correction]"
# bug -> (how it is made, the training case, the quantity and step where it must first differ, the hint)
BROKEN_OPTIMIZERS = {
    "weight decay on LayerNorm and biases": (_decay_everything, TRAIN,
                                             "steps/param/bert.embeddings.LayerNorm.weight", "step 2", "decayed?"),
    "no bias correction": (lambda: _bias_correction(False), TRAIN, "steps/param/" + WORD, "step 2",
                           "no bias correction?"),
    "bias correction where the case has none": (lambda: _bias_correction(True), "train[pretraining,no_bias_correction]",
                                                "steps/param/" + WORD, "step 2", "bias correction applied?"),
    "Adam with L2 in the gradient (PyTorch's Adam(weight_decay=...))": (
        _adam_l2, TRAIN, "steps/m/" + WORD, "step 1", "(1 - b1) * wd * p"),
    "learning rate one step late": (_lr_one_step_late, TRAIN, "lr", "step 1", "one step late?"),
    "no clipping": (_no_clipping, TRAIN, "steps/m/" + WORD, "step 1", "not clipped"),
    "clipping after the update instead of before": (_clipping_after_the_update, TRAIN, "steps/m/" + WORD,
                                                    "step 1", "not clipped"),
    "clipping by max_norm / (norm + 1e-6) (PyTorch's clip_grad_norm_)": (
        _torch_clip_grad_norm, TRAIN, "steps/m/" + WORD, "step 1", "clip_grad_norm_"),
    "MLM decoder's update not applied to the tied word table": (_untied_decoder, TRAIN, "steps/grad/" + WORD,
                                                                "step 1", "tied MLM decoder"),
    "[PAD] row updated": (_pad_row_gets_gradient, "train[sequence_classification,bias_correction]",
                          "steps/grad/" + WORD, "step 1", "[PAD] row"),
}


def with_rounding(results_dir, out_dir, seed=0, ulps=2):
    """A copy of a port's results whose every float entry is moved by up to `ulps` units in the last
    place (x * (1 + k * eps), k a random integer in [-ulps, ulps]): the port computed in another order.
    Every hint must survive it: they are decided against the case's tolerance, never by equality."""
    rng = np.random.default_rng(seed)
    for root, _, files in os.walk(results_dir):
        for f in sorted(files):
            source = os.path.join(root, f)
            target = os.path.join(out_dir, os.path.relpath(source, results_dir))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if f.endswith(".npy"):
                np.save(target, _rounded(np.load(source), rng, ulps))
            else:
                tensors = safetensors.load_file(source)
                safetensors.save_file({k: _rounded(v, rng, ulps) for k, v in tensors.items()}, target)


def _rounded(x, rng, ulps):
    if not np.issubdtype(x.dtype, np.floating):
        return x
    k = rng.integers(-ulps, ulps + 1, size=x.shape)
    return (x * (1 + k * np.finfo(x.dtype).eps)).astype(x.dtype)


def port_dir(workdir, bug) -> str:
    """Where broken_reports / broken_optimizer_reports write that bug's results under workdir."""
    return os.path.join(workdir, re.sub(r"[^A-Za-z0-9.+-]+", "_", bug))


def run_port(golden_dir, results_dir, bug=None, seed=0):
    """Write the results of the correct port (bug None) or of a broken one (a broken optimizer: of
    the training cases only), and conform them."""
    if bug in BROKEN_OPTIMIZERS:
        with BROKEN_OPTIMIZERS[bug][0]():
            write_port_results(results_dir, seed, make_cases=training_cases)
        return conform.conform(golden_dir, results_dir, only=["train*"])
    with BROKEN[bug][0]() if bug else contextlib.nullcontext():
        write_port_results(results_dir, seed)
    return conform.conform(golden_dir, results_dir)


def first_difference(report) -> str | None:
    """The name a whole model's report says the port first differs at (forward, then backward,
    then the first failing gradient), or None if it passes."""
    if report.passed:
        return None
    row = report.first_failure(report.forward_order) or report.first_failure(report.backward_order) or \
        next(r for r in report.rows if r.status == "FAIL")
    return row.name


def broken_reports(golden_dir, workdir) -> dict:
    """bug -> the conform reports of that broken port."""
    return {bug: run_port(golden_dir, port_dir(workdir, bug), bug) for bug in BROKEN}


def symptoms_table(reports_by_bug) -> str:
    """The markdown table of docs/porting.md: for each bug, what conform says."""
    lines = ["| bug | first differs at (float64, whole model) | max abs error there | cases that fail (float64) | "
             "float32 |", "|---|---|---|---|---|"]
    for bug, reports in reports_by_bug.items():
        case = BROKEN[bug][1]
        whole = next(r for r in reports if r.name == f"float64/{case}")
        name = first_difference(whole)
        row = next(r for r in whole.rows if r.name == name)
        failing = {dt: [r.name.split("/", 1)[1] for r in reports if not r.passed and r.name.startswith(dt + "/")]
                   for dt in ("float64", "float32")}
        f32 = "the same" if failing["float32"] == failing["float64"] else \
            f"{len(failing['float32'])}: " + ", ".join(f"`{n}`" for n in failing["float32"])
        lines.append(f"| {bug} | `{name}` in `{case}` | {row.max_abs:.2g} | {len(failing['float64'])}: "
                     + ", ".join(f"`{n}`" for n in failing["float64"]) + f" | {f32} |")
    return "\n".join(lines)


def broken_optimizer_reports(golden_dir, workdir) -> dict:
    """bug -> the conform reports of the training cases of that broken optimizer."""
    return {bug: run_port(golden_dir, port_dir(workdir, bug), bug) for bug in BROKEN_OPTIMIZERS}


def training_symptoms_table(reports_by_bug) -> str:
    """The markdown table of docs/porting.md's training section: for each broken optimizer, the
    verdict on its training case in float64, and where float32 first differs."""
    lines = ["| bug | case | verdict (float64) | float32 | training cases that fail |", "|---|---|---|---|---|"]
    for bug, reports in reports_by_bug.items():
        case = BROKEN_OPTIMIZERS[bug][1]
        verdicts = {dt: next(r for r in reports if r.name == f"{dt}/{case}").verdict() for dt in ("float64", "float32")}
        # the place: " first differs at `NAME` (WHERE)", or PASS
        places = {dt: v.split(":")[1] if ":" in v else v for dt, v in verdicts.items()}
        f32 = "the same place" if places["float32"] == places["float64"] else places["float32"].strip()
        failing = sum(not r.passed for r in reports)
        lines.append(f"| {bug} | `{case}` | {verdicts['float64'].replace('|', '/')} | {f32} | {failing} of "
                     f"{len(reports)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        write_goldens(os.path.join(tmp, "golden"))
        print(symptoms_table(broken_reports(os.path.join(tmp, "golden"), tmp)))
        print()
        print(training_symptoms_table(broken_optimizer_reports(os.path.join(tmp, "golden"), tmp)))
