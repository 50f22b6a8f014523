"""A BERT port in plain PyTorch, checked against npbert's golden vectors.

Written the way an outside porter would write one: from the golden directory's manifest.json
(conventions, config, each case's description and tensor list) and the docs (docs/model.md's
trace names, docs/layers/*.md), without importing npbert or using transformers' model classes.
Every layer is a small function on a flat dict of Hugging Face-named tensors; autograd does
every backward.

    python tests/reference/torch_port.py GOLDEN_DIR RESULTS_DIR [--checkpoint DIR]
    npbert conform GOLDEN_DIR RESULTS_DIR

For each case it reads the inputs and parameters from GOLDEN_DIR/<file>, runs the forward in the
case's dtype, feeds the golden upstream gradient (grad/out; d loss / d loss = 1 for whole models)
to autograd, and writes RESULTS_DIR/<file>: the outputs, grad/<every input and parameter the
golden differentiates> and, for whole models, every trace intermediate and grad/<intermediate>
(via retain_grad). With --checkpoint DIR (the checkpoint the goldens were written from) it also
runs the checkpoint/<dtype>/checkpoint_forward cases. The tokenizer case is not a model's, and this port
draws no dropout: both are skipped (the tokenizer's and bert_for_pretraining[dropout]).

Needs torch and safetensors only (reference tooling, not CI).
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

IGNORE = -100                     # conventions["ignore_index"]


class Trace(dict):
    """Records each named intermediate (docs/model.md's trace names), in forward order; op and
    layer cases pass no_trace instead."""

    def __call__(self, name, t):
        self[name] = t
        return t


def no_trace(name, t):
    return t


# ---------------------------------------------------------------- ops (docs/layers/*.md)

def gelu(x, act):
    """'gelu' is exact erf GELU; 'gelu_new' the tanh approximation (conventions["hidden_act"])."""
    return F.gelu(x, approximate={"gelu": "none", "gelu_new": "tanh"}[act])


def layer_norm(x, gamma, beta, eps):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)   # biased variance, eps inside the sqrt


def cross_entropy(logits, labels, ignore_index=IGNORE):
    """Mean over the rows whose label is not ignored; 0 when no row counts (npbert's rule, where
    PyTorch would give NaN: docs/layers/cross_entropy.md)."""
    if not (labels != ignore_index).any():
        return logits.sum() * 0
    return F.cross_entropy(logits, labels, ignore_index=ignore_index)


def span_loss(logits, start, end):
    """(CE(start scores) + CE(end scores)) / 2; positions clamped into [0, T], T ignored (as HF)."""
    T = logits.shape[1]
    s, e = logits[..., 0], logits[..., 1]                          # (B, T) each
    start, end = start.clamp(0, T), end.clamp(0, T)
    return (cross_entropy(s, start, T) + cross_entropy(e, end, T)) / 2


def mask_bias(attention_mask, dtype):
    """(B, T) 0/1 -> 0 for real tokens, finfo(dtype).min for padding (added to padded keys)."""
    return (1 - attention_mask.to(dtype)) * torch.finfo(dtype).min


def attention_core(q, k, v, bias, rec=no_trace, name=""):
    """softmax(q k^T / sqrt(D) + bias[:, None, None, :]) v; q, k, v (B, A, T, D)."""
    scores = rec(name + ".scores", q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias[:, None, None, :])
    probs = rec(name + ".probs", torch.softmax(scores, dim=-1))    # (B, A, T, T)
    return probs @ v                                               # (B, A, T, D)


# ---------------------------------------------------------------- layers (HF module paths)

def dense(x, p, name):
    """The linear module `name`: x W^T + b with W = p[name.weight] (out, in), b = p[name.bias]."""
    return F.linear(x, p[name + ".weight"], p[name + ".bias"])


def norm(x, p, name, eps):
    """The LayerNorm module `name` (its weight is gamma, its bias beta)."""
    return layer_norm(x, p[name + ".weight"], p[name + ".bias"], eps)


def self_attention(x, p, pre, bias, heads, rec=no_trace):
    """BertSelfAttention + attention.output.dense, no residual; pre is the module path up to 'self'."""
    B, T, H = x.shape
    D = H // heads

    def split(t):                                                  # (B, T, H) -> (B, A, T, D)
        return t.view(B, T, heads, D).transpose(1, 2)

    q, k, v = (rec(f"{pre}self.{n}", dense(x, p, f"{pre}self.{n}")) for n in ("query", "key", "value"))
    ctx = attention_core(split(q), split(k), split(v), bias, rec, pre + "self")
    ctx = rec(pre + "self", ctx.transpose(1, 2).reshape(B, T, H))  # heads merged
    return rec(pre + "output.dense", dense(ctx, p, pre + "output.dense"))


def feedforward(h, p, pre, act, rec=no_trace):
    """output.dense(gelu(intermediate.dense(h))), no residual."""
    a = rec(pre + "intermediate.dense", dense(h, p, pre + "intermediate.dense"))
    a = rec(pre + "intermediate", gelu(a, act))
    return rec(pre + "output.dense", dense(a, p, pre + "output.dense"))


def encoder_layer(x, p, pre, bias, cfg, rec=no_trace):
    """Post-LN: h = LN(x + attention(x)); y = LN(h + feedforward(h)). pre ends with '.' or is ''."""
    eps, heads = cfg["layer_norm_eps"], cfg["num_attention_heads"]
    s1 = rec(pre + "attention.output.sum", x + self_attention(x, p, pre + "attention.", bias, heads, rec))
    h = rec(pre + "attention", norm(s1, p, pre + "attention.output.LayerNorm", eps))
    s2 = rec(pre + "output.sum", h + feedforward(h, p, pre, cfg["hidden_act"], rec))
    return rec(pre.rstrip("."), norm(s2, p, pre + "output.LayerNorm", eps))     # the layer's output


def encoder(x, p, bias, cfg, rec=no_trace):
    for i in range(cfg["num_hidden_layers"]):
        x = encoder_layer(x, p, f"bert.encoder.layer.{i}.", bias, cfg, rec)
    return x


def embeddings(input_ids, token_type_ids, p, cfg, rec=no_trace):
    """LayerNorm(word[ids] + token_type[types] + position[0..T-1]); dropout is off (evaluation)."""
    pre = "bert.embeddings."
    T = input_ids.shape[1]
    words = rec(pre + "word_embeddings",                           # [PAD]'s row gets no gradient from the lookup
                F.embedding(input_ids, p[pre + "word_embeddings.weight"], padding_idx=cfg["pad_token_id"]))
    positions = rec(pre + "position_embeddings", p[pre + "position_embeddings.weight"][:T])   # (T, H)
    types = rec(pre + "token_type_embeddings", F.embedding(token_type_ids, p[pre + "token_type_embeddings.weight"]))
    s = rec(pre + "sum", words + types + positions)                # in that order, as HF adds them
    e = rec(pre + "LayerNorm", norm(s, p, pre + "LayerNorm", cfg["layer_norm_eps"]))
    return rec("bert.embeddings", e)                               # dropout off: the same tensor


def pooler(h, p, rec=no_trace):
    z = rec("bert.pooler.dense", dense(h[:, 0], p, "bert.pooler.dense"))
    return rec("bert.pooler", torch.tanh(z))                       # (B, H), the [CLS] token


def mlm_head(h, positions, p, cfg, rec=no_trace):
    """At flat positions into the B*T tokens: LN(gelu(dense)), then the tied decoder (word table) + bias."""
    pre = "cls.predictions."
    hs = h.reshape(-1, h.shape[-1])[positions]                     # (N, H)
    t = rec(pre + "transform.dense", dense(hs, p, pre + "transform.dense"))
    t = rec(pre + "transform.transform_act_fn", gelu(t, cfg["hidden_act"]))
    t = rec(pre + "transform", norm(t, p, pre + "transform.LayerNorm", cfg["layer_norm_eps"]))
    return rec(pre + "logits", F.linear(t, p["bert.embeddings.word_embeddings.weight"], p[pre + "bias"]))   # (N, V)


def nsp_head(pooled, p, rec=no_trace):
    return rec("cls.seq_relationship", dense(pooled, p, "cls.seq_relationship"))   # (B, 2): IsNext, NotNext


def classifier(x, p, name="classifier", rec=no_trace):
    return rec(name, dense(x, p, name))                            # dropout off


# ---------------------------------------------------------------- whole models

def bert_model(t, p, cfg, rec=no_trace):
    """BertModel: (sequence output (B, T, H), pooled (B, H))."""
    dtype = p["bert.embeddings.word_embeddings.weight"].dtype
    bias = rec("bert.mask_bias", mask_bias(t["attention_mask"], dtype))
    x = embeddings(t["input_ids"], t["token_type_ids"], p, cfg, rec)
    h = encoder(x, p, bias, cfg, rec)
    return h, pooler(h, p, rec)


def bert_for_pretraining(t, p, cfg, rec):
    h, pooled = bert_model(t, p, cfg, rec)
    mlm_logits, nsp_logits = mlm_head(h, t["mlm_positions"], p, cfg, rec), nsp_head(pooled, p, rec)
    mlm_loss = rec("mlm_loss", cross_entropy(mlm_logits, t["mlm_labels"]))
    nsp_loss = rec("nsp_loss", cross_entropy(nsp_logits, t["nsp_labels"]))
    loss = rec("loss", mlm_loss + nsp_loss)
    return {"loss": loss, "mlm_loss": mlm_loss, "nsp_loss": nsp_loss,
            "mlm_logits": mlm_logits, "nsp_logits": nsp_logits}


def bert_for_sequence_classification(t, p, cfg, rec):
    _, pooled = bert_model(t, p, cfg, rec)
    logits = classifier(pooled, p, rec=rec)                        # (B, K)
    if logits.shape[1] == 1:                                       # num_labels 1: regression, MSE
        loss = F.mse_loss(logits[:, 0], t["labels"].to(logits.dtype))
    else:
        loss = cross_entropy(logits, t["labels"])
    return {"logits": logits, "loss": rec("loss", loss)}


def bert_for_token_classification(t, p, cfg, rec):
    h, _ = bert_model(t, p, cfg, rec)                              # the pooler is unused: its gradient is 0
    logits = classifier(h, p, rec=rec)                             # (B, T, K)
    loss = cross_entropy(logits.reshape(-1, logits.shape[-1]), t["labels"].reshape(-1))
    return {"logits": logits, "loss": rec("loss", loss)}


def bert_for_question_answering(t, p, cfg, rec):
    h, _ = bert_model(t, p, cfg, rec)
    logits = classifier(h, p, "qa_outputs", rec)                   # (B, T, 2): start, end scores
    loss = rec("loss", span_loss(logits, t["start_positions"], t["end_positions"]))
    return {"start_logits": logits[..., 0], "end_logits": logits[..., 1], "loss": loss}


def bert_for_multiple_choice(t, p, cfg, rec):
    B, C, T = t["input_ids"].shape                                 # each choice its own sequence
    flat = {k: t[k].reshape(B * C, T) for k in ("input_ids", "token_type_ids", "attention_mask")}
    _, pooled = bert_model(flat, p, cfg, rec)                      # (B*C, H)
    logits = rec("logits", classifier(pooled, p, rec=rec).reshape(B, C))
    return {"logits": logits, "loss": rec("loss", cross_entropy(logits, t["labels"]))}


MODELS = {
    "bert_for_pretraining": bert_for_pretraining,
    "bert_for_sequence_classification": bert_for_sequence_classification,
    "bert_for_sequence_regression": bert_for_sequence_classification,
    "bert_for_token_classification": bert_for_token_classification,
    "bert_for_question_answering": bert_for_question_answering,
    "bert_for_multiple_choice": bert_for_multiple_choice,
}

# ---------------------------------------------------------------- op and layer cases: t holds every
# input and parameter under its golden name, c the manifest config overlaid with the case's constants.

OPS = {
    "linear": lambda t, c: F.linear(t["x"], t["w"], t["b"]),
    "embedding": lambda t, c: F.embedding(t["ids"], t["table"], padding_idx=c.get("padding_idx")),
    "layernorm": lambda t, c: layer_norm(t["x"], t["gamma"], t["beta"], c["eps"]),
    "gelu": lambda t, c: gelu(t["x"], c["hidden_act"]),
    "linear_gelu": lambda t, c: gelu(F.linear(t["x"], t["w"], t["b"]), c["hidden_act"]),
    "dropout": lambda t, c: t["x"] * t["keep"].to(t["x"].dtype) / (1 - c["p"]),
    "softmax": lambda t, c: torch.softmax(t["x"], dim=-1),
    "attention_core": lambda t, c: attention_core(t["q"], t["k"], t["v"], t["mask_bias"]),
    "cross_entropy": lambda t, c: cross_entropy(t["logits"], t["labels"]),
    "mse": lambda t, c: F.mse_loss(t["pred"], t["target"]),
    "span_loss": lambda t, c: span_loss(t["logits"], t["start_positions"], t["end_positions"]),
    "self_attention": lambda t, c: self_attention(t["x"], t, "attention.", t["mask_bias"], c["num_attention_heads"]),
    "feedforward": lambda t, c: feedforward(t["x"], t, "", c["hidden_act"]),
    "encoder_layer": lambda t, c: encoder_layer(t["x"], t, "", t["mask_bias"], c),
    "encoder": lambda t, c: encoder(t["x"], t, t["mask_bias"], c),
    "bert_embeddings": lambda t, c: embeddings(t["input_ids"], t["token_type_ids"], t, c),
    "pooler": lambda t, c: pooler(t["h"], t),
    "mlm_head": lambda t, c: mlm_head(t["h"], t["mlm_positions"], t, c),
    "nsp_head": lambda t, c: nsp_head(t["pooled"], t),
    "classifier": lambda t, c: classifier(t["x"], t),
    "qa_head": lambda t, c: classifier(t["h"], t, "qa_outputs"),
}


# ---------------------------------------------------------------- running a case

def grad_or_zeros(t):
    """A tensor's gradient; zeros where the loss does not reach it (the pooler under token
    classification and QA), which autograd reports as None."""
    return t.grad if t.grad is not None else torch.zeros_like(t)


def run_case(entry, golden, cfg):
    """The results of one op, layer or model case: {name: tensor} under the golden names."""
    wants_grad = {x["name"][len("grad/"):] for x in entry["tensors"] if x["role"] == "grad"}
    t = {}
    for x in entry["tensors"]:
        if x["role"] in ("input", "param"):
            t[x["name"]] = golden[x["name"]].clone().requires_grad_(x["name"] in wants_grad)
    c = {**cfg, **entry["constants"]}
    results = {}
    if entry["kind"] == "model":
        trace = Trace()
        outputs = MODELS[entry["name"]](t, t, c, trace)           # inputs and parameters share one dict
        for v in trace.values():
            if v.requires_grad and v.dim() > 0:
                v.retain_grad()
        outputs["loss"].backward(golden["grad/loss"])              # d loss / d loss = 1
        results.update({k: v.detach() for k, v in trace.items()})
        results.update({"grad/" + k: grad_or_zeros(v) for k, v in trace.items() if v.requires_grad and v.dim() > 0})
    else:
        outputs = {"out": OPS[entry["name"].split("[")[0]](t, c)}
        outputs["out"].backward(golden["grad/out"])
    results.update({k: v.detach() for k, v in outputs.items()})
    results.update({"grad/" + k: grad_or_zeros(t[k]) for k in wants_grad})
    return results


@functools.lru_cache(maxsize=1)                                     # read once for both dtypes
def read_checkpoint(path, sha256):
    """A BertModel checkpoint's weights under BertForPreTraining names: 'bert.' is added where
    missing (all-MiniLM-L6-v2 has none); integer buffers (position_ids) are dropped."""
    with open(path, "rb") as f:
        if hashlib.sha256(f.read()).hexdigest() != sha256:
            sys.exit(f"torch_port: {path} is not the checkpoint the goldens were written from (sha256 differs)")
    return {name if name.startswith(("bert.", "cls.")) else "bert." + name: w
            for name, w in load_file(path).items() if w.is_floating_point()}


def run_checkpoint_case(entry, golden, info, directory):
    dtype = getattr(torch, entry["dtype"])
    cfg = info["config"]
    weights = read_checkpoint(os.path.join(directory, info["weights_file"]), info["sha256"])
    params = {name: w.to(dtype) for name, w in weights.items()}    # "cast to this dtype"
    trace = Trace()
    with torch.no_grad():                                          # forward only: no gradients in this case
        h, pooled = bert_model({k: golden[k] for k in ("input_ids", "token_type_ids", "attention_mask")},
                               params, cfg, trace)
    return {**trace, "last_hidden_state": h, "pooler_output": pooled}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("golden_dir")
    ap.add_argument("results_dir")
    ap.add_argument("--checkpoint", metavar="DIR",
                    help="the checkpoint directory the goldens' checkpoint cases were written from")
    args = ap.parse_args(argv)
    with open(os.path.join(args.golden_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    start, done, skipped = time.perf_counter(), 0, []
    for entry in manifest["cases"]:
        golden = load_file(os.path.join(args.golden_dir, entry["file"]))
        if entry["kind"] == "checkpoint" and args.checkpoint:
            results = run_checkpoint_case(entry, golden, manifest["checkpoint"], args.checkpoint)
        elif entry["kind"] in ("op", "layer", "model") and not isinstance(entry["constants"].get("dropout"), dict):
            results = run_case(entry, golden, manifest["config"])
        else:
            skipped.append(f"{entry['dtype']}/{entry['name']}")
            continue
        out = os.path.join(args.results_dir, entry["file"])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        save_file({k: v.detach().clone() for k, v in results.items()}, out)   # clone: some names share a tensor
        done += 1
    print(f"torch_port: wrote {done} cases to {args.results_dir} in {time.perf_counter() - start:.1f} s"
          + (f"; skipped {', '.join(skipped)}" if skipped else ""))


if __name__ == "__main__":
    main()
