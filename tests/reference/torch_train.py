"""The golden training cases run in PyTorch: five steps of pretraining and of sequence
classification, as a port would run them, written for `npbert conform`, with the figures of
docs/porting.md's training section printed.

    python tests/reference/torch_train.py GOLDEN_DIR RESULTS_DIR
    npbert conform GOLDEN_DIR RESULTS_DIR --only "train*"

The models are torch_port.py's (autograd backward, F.embedding with padding_idx, the decoder tied
by using the word table); clipping scales every gradient by max_norm / norm before the update
(with --torch-clip: torch.nn.utils.clip_grad_norm_, whose max_norm / (norm + 1e-6) is 3e-7 off);
with bias correction the optimizer is torch.optim.AdamW (two parameter groups: weight decay
0.01, and 0 for LayerNorm and biases; the key biases left out: frozen); without it, the same
update written out (torch's AdamW cannot turn bias correction off). The learning rate is set per
step from the case's schedule. Nothing here imports npbert.

It prints, per dtype, the largest error (max |torch - golden| / max |golden|, at least the tensor's
floor) of each quantity over the four cases, and npbert's float32 goldens against its float64 ones.

Measured (torch 2.13.0 CPU): float64 within 1.3e-14 of the goldens' scale at worst (the
parameters), float32 within 5.0e-6; `npbert conform` passes all 8 cases. docs/porting.md gives
the whole table.
Needs torch and safetensors only (reference tooling, not CI).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_port import bert_for_pretraining, bert_for_sequence_classification, no_trace  # noqa: E402

MODELS = {"pretraining": bert_for_pretraining, "sequence_classification": bert_for_sequence_classification}
GROUPS = ("loss", "grad_norm", "lr", "steps/grad", "steps/m", "steps/v", "steps/param", "trained", "m", "v")


def lr_at(step, c):
    """transformers' get_linear_schedule_with_warmup, for 0-based update `step`."""
    if step < c["warmup_steps"]:
        return c["peak_lr"] * step / max(1, c["warmup_steps"])
    return c["peak_lr"] * max(0.0, (c["total_steps"] - step) / max(1, c["total_steps"] - c["warmup_steps"]))


def no_decay(name):
    return name.endswith(".bias") or "LayerNorm" in name


def frozen(name):
    return name.endswith("attention.self.key.bias")


def adamw_without_bias_correction(params, state, lr, c):
    """The original BERT's update: m / (sqrt(v) + eps), decoupled decay (AdamWeightDecayOptimizer)."""
    b1, b2 = c["betas"]
    with torch.no_grad():
        for name, p in params.items():
            m, v = state.setdefault(name, (torch.zeros_like(p), torch.zeros_like(p)))
            m.mul_(b1).add_(p.grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            wd = 0.0 if no_decay(name) else c["weight_decay"]
            p.sub_(lr * (m / (v.sqrt() + c["eps"]) + wd * p))


def clip(params, max_norm, torch_clip=False):
    """Scale every gradient by max_norm / norm when the global norm exceeds max_norm (the goldens'
    convention: TensorFlow's clip_by_global_norm, the original BERT's) -> the norm before.
    torch_clip: torch.nn.utils.clip_grad_norm_, which divides by norm + 1e-6 instead."""
    if torch_clip:
        return torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=False)
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
    if norm > max_norm:
        for p in params:
            p.grad.mul_(max_norm / norm)
    return norm


def run(entry, golden, config, torch_clip=False):
    """Five steps of one case (config: the manifest's) -> {golden name: tensor}."""
    c = entry["constants"]
    kind = entry["name"][len("train["):].split(",")[0]
    params = {t["name"]: torch.nn.Parameter(golden[t["name"]].clone())
              for t in entry["tensors"] if t["role"] == "param"}
    inputs = {t["name"]: golden[t["name"]] for t in entry["tensors"] if t["role"] == "input"}
    cfg = {**config, **c}
    trained = {k: p for k, p in params.items() if not frozen(k)}
    groups = [{"params": [p for k, p in trained.items() if not no_decay(k)], "weight_decay": c["weight_decay"]},
              {"params": [p for k, p in trained.items() if no_decay(k)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=0.0, betas=tuple(c["betas"]), eps=c["eps"], foreach=False) \
        if c["bias_correction"] else None
    manual = {}
    out = {"loss": [], "grad_norm": [], "lr": []}
    steps = {kind_: {k: [] for k in params} for kind_ in ("grad", "param")}
    steps.update({kind_: {k: [] for k in trained} for kind_ in ("m", "v")})
    for step in range(c["steps"]):
        lr = lr_at(step, c)
        for p in params.values():
            p.grad = None
        loss = MODELS[kind]({**inputs, **params}, params, cfg, no_trace)["loss"]
        loss.backward()
        for k, p in params.items():
            steps["grad"][k].append(p.grad.detach().clone())
        norm = clip(list(params.values()), c["max_grad_norm"], torch_clip)
        if opt is not None:
            for g in opt.param_groups:
                g["lr"] = lr
            opt.step()
        else:
            adamw_without_bias_correction(trained, manual, lr, c)
        for k, p in trained.items():
            m, v = (opt.state[p]["exp_avg"], opt.state[p]["exp_avg_sq"]) if opt is not None else manual[k]
            steps["m"][k].append(m.detach().clone())
            steps["v"][k].append(v.detach().clone())
        for k, p in params.items():
            steps["param"][k].append(p.detach().clone())
        dtype = params["bert.embeddings.word_embeddings.weight"].dtype
        for key, value in (("loss", loss.detach()), ("grad_norm", norm), ("lr", torch.tensor(lr, dtype=torch.float64))):
            out[key].append(value.to(dtype))
    results = {k: torch.stack(v) for k, v in out.items()}
    for kind_, per in steps.items():
        results.update({f"steps/{kind_}/{k}": torch.stack(v) for k, v in per.items()})
        last = {"param": "trained", "m": "m", "v": "v"}.get(kind_)
        if last:
            results.update({f"{last}/{k}": v[-1] for k, v in per.items()})
    return results


def error(got, want, floor):
    got, want = got.double(), want.double()
    scale = max(float(want.abs().max()), floor, 1e-300)
    return float((got - want).abs().max()) / scale


def group_of(name):
    return next(g for g in sorted(GROUPS, key=len, reverse=True) if name == g or name.startswith(g + "/"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("golden_dir")
    ap.add_argument("results_dir")
    ap.add_argument("--torch-clip", action="store_true",
                    help="clip with torch.nn.utils.clip_grad_norm_ (max_norm / (norm + 1e-6)), not max_norm / norm")
    args = ap.parse_args(argv)
    with open(os.path.join(args.golden_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    worst = {}                                     # (what, group) -> largest error
    goldens = {}
    # dropout on (constants.dropout an object): this port draws no dropout, so it leaves those cases out
    for entry in (e for e in manifest["cases"] if e["kind"] == "training" and not e["constants"].get("dropout")):
        golden = load_file(os.path.join(args.golden_dir, entry["file"]))
        goldens[(entry["dtype"], entry["name"])] = (entry, golden)
        results = run(entry, golden, manifest["config"], args.torch_clip)
        path = os.path.join(args.results_dir, entry["file"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        save_file({k: v.contiguous() for k, v in results.items()}, path)
        for t in entry["tensors"]:
            if t["role"] in ("step", "final", "step_tensor"):
                key = (f"torch {entry['dtype']}", group_of(t["name"]))
                worst[key] = max(worst.get(key, 0.0), error(results[t["name"]], golden[t["name"]], t.get("floor", 0.0)))
    for (dtype, name), (entry, g32) in goldens.items():     # npbert float32 against its float64
        if dtype == "float32":
            entry64, g64 = goldens[("float64", name)]
            for t in entry64["tensors"]:
                if t["role"] in ("step", "final", "step_tensor"):
                    key = ("npbert float32 vs float64", group_of(t["name"]))
                    worst[key] = max(worst.get(key, 0.0), error(g32[t["name"]], g64[t["name"]], t.get("floor", 0.0)))
    whats = sorted({w for w, _ in worst})
    print("| quantity | " + " | ".join(whats) + " |")
    print("|---|" + "---|" * len(whats))
    for group in GROUPS:
        print(f"| `{group}` | " + " | ".join(f"{worst.get((w, group), np.nan):.1e}" for w in whats) + " |")


if __name__ == "__main__":
    main()
