"""What a golden directory promises a port: the manifest's schema and version, the role of each
tensor, the conventions the numbers assume, the tolerance a port must meet, and how an error is
measured. docs/porting.md explains each; `npbert golden` writes them, `npbert conform` reads them.
"""
from __future__ import annotations

import json
import os
import re

import numpy as np

from npbert.errors import JSON_ERRORS, InputError
from npbert.gradcheck.checker import scaled_error

# 2: training cases, their roles; 3: tokenizer rules, checkpoint vocab.txt; 4: counter-based dropout (the
# dropout case's keep from its constants, the dropout_uniforms case); 5: a model and training cases with
# dropout on (constants.dropout an object there)
SCHEMA, VERSION = "npbert-golden", 5
MANIFEST = "manifest.json"

ROLES = {
    "input": "given to the forward: activations, ids, masks, positions, labels",
    "param": "a parameter, under its Hugging Face name and in its layout (linear weights (out, in))",
    "output": "what the forward returns",
    "upstream": "the gradient given to the backward: d loss / d output (1 for a loss)",
    "grad": "d loss / d an input or parameter, named grad/<its name>",
    "intermediate": "a named value inside a whole model's forward (the trace: docs/model.md)",
    "intermediate_grad": "d loss / d an intermediate, named grad/<its name>",
    "step": "a training case's value at each step, shape (steps,): loss, grad_norm (the global gradient norm "
            "before clipping), lr (the learning rate the update used)",
    "final": "a training case's state after the last step: trained/<param>, and AdamW's moments m/<param> "
             "and v/<param>",
    "step_tensor": "a training case's tensor at each step, shape (steps, *param shape): steps/grad/<param> "
                   "(before clipping), steps/m/<param>, steps/v/<param>, steps/param/<param> (after the update)",
}
REQUIRED = ("output", "grad", "step", "final")                    # a port must give these ...
OPTIONAL = ("intermediate", "intermediate_grad", "step_tensor")   # ... and these where it can (compared when given)

# max |port - golden| / max |golden| per tensor must stay below this (docs/porting.md, measured).
# float64: Hugging Face's classes agree to 2.7e-15 of the scale, every bug in docs/porting.md's
# table shows at 1e-6 or more. float32: npbert's float32 is within 1.0e-6 of the float64 answer,
# Hugging Face's float32 within 1.4e-6 of npbert's and npbert's numba backend within 1.5e-6: 2e-5
# leaves 13x for other summation orders and still catches LayerNorm eps 1e-5 where it shows.
TOLERANCE = {"float64": 1e-10, "float32": 2e-5}
MASK_MAGNITUDE = 1e30   # entries this large are the attention mask value, finfo(dtype).min: equal or wrong

ERROR = ("per tensor: max |port - golden| / max |golden|, the scale taken over entries below 1e30 in "
         "magnitude, and at least the tensor's \"floor\" where it has one (a gradient that is 0 in exact "
         "arithmetic: both sides are rounding noise, measured against the case's largest gradient); entries at "
         "or above 1e30 (the mask value finfo(dtype).min) and integer tensors must be equal; NaN or a shape or "
         "dtype other than the golden's fails")

CONVENTIONS = {
    "weight_layout": "linear weights are (out_features, in_features): y = x W^T + b (PyTorch, Hugging Face)",
    "layer_norm": "over the last axis, biased variance (divide by H), eps inside the square root: "
                  "(x - mean) / sqrt(var + eps) * gamma + beta",
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu is the exact x/2 (1 + erf(x / sqrt 2)); gelu_new, the tanh approximation, only where a "
                  "case's constants say so",
    "attention_scale": "scores = q k^T / sqrt(head_size), then + mask value at padded keys",
    "attention_mask_value": "finfo(dtype).min (float64 -1.7976931348623157e308, float32 -3.4028234663852886e38) "
                            "added to a padded key's score, before the softmax over the keys (last axis)",
    "heads": "hidden (B, T, H) -> (B, A, T, H/A): head a is columns a*H/A ... (a+1)*H/A - 1 of q, k, v",
    "residual": "post-LayerNorm: LayerNorm(x + sublayer(x)) in every encoder layer",
    "position_ids": "0 .. T-1 for every row, padded or not",
    "padding_idx": "pad_token_id 0: the word lookup gives that row no gradient; the tied decoder still does",
    "tied_decoder": "the MLM decoder weight is bert.embeddings.word_embeddings.weight (its gradient adds to "
                    "that table's); cls.predictions.bias is the decoder's bias",
    "mlm_positions": "flat indices into the B*T tokens; MLM logits only at those positions, (N, V)",
    "ignore_index": -100,
    "losses": "cross-entropy mean over the rows whose label is not -100; BertForPreTraining loss = mlm_loss + "
              "nsp_loss; regression (num_labels 1) is the mean squared error",
    "span_loss": "extractive QA: (CE(start) + CE(end)) / 2 over every position, padded ones included; a "
                 "position is clamped into [0, T] and T is ignored (so -1 means [CLS], T+2 counts nothing), as Hugging Face does",
    "pooler": "tanh(dense(h[:, 0])): the [CLS] token",
    "dropout": "off (evaluation) in every case but the dropout op, whose keep mask is an input, and the cases whose "
               "constants.dropout is an object (bert_for_pretraining[dropout], train[*,dropout]), which says how: "
               "y = x * keep / (1 - p); keep = u >= p with npbert's counter-based uniforms (the dropout_uniforms "
               "case defines them), u and p compared as doubles",
}


# How to read a case, for the manifest (docs/porting.md says the same at length).
READING = {
    "constants": "layer and model cases read the manifest's config (layer_norm_eps, hidden_act, "
                 "num_attention_heads, pad_token_id); an op case's constants name what it reads instead "
                 "(eps, hidden_act, p, padding_idx)",
    "parameter_names": "ops: w, b, gamma, beta, table; self_attention, feedforward and encoder_layer: names "
                       "relative to one layer (attention.self.query.weight is bert.encoder.layer.{i}."
                       "attention.self.query.weight); every other layer, head and model: full Hugging Face names",
    "unused_parameters": "a parameter the case's loss does not reach (the pooler in token classification and QA) "
                         "has gradient 0: write zeros",
    "results": "write each case's output, grad and (optional) intermediate tensors at the case's file under the "
               "results directory, as safetensors or as a folder of that name without .safetensors holding one "
               ".npy per tensor (grad/w is grad/w.npy); some names hold equal values (bert.embeddings and "
               "bert.embeddings.LayerNorm without dropout, mlm_logits and cls.predictions.logits): write each",
    "training": "a training case starts from its param tensors and runs constants.steps updates on its input batch "
                "(the same batch every step) with the recipe in its constants; write loss, grad_norm and lr per "
                "step, trained/<param>, m/<param>, v/<param> after the last, and where you can the step_tensors; "
                "the verdict names the first step and quantity that differ",
    "generator": "a generator case (dropout_uniforms) has no forward to run: compute the keys of calls 0, 1, ... of "
                 "step constants.step of DropoutStream(constants.dropout_seed), and the uniforms u and masks keep "
                 "(u >= constants.p) of each key at the input index, as its description says; write keys, u and keep",
    "dropout": "constants.dropout is 0.0 (off) in a training case without dropout; an object in a case with dropout "
               "on: hidden_dropout_prob and attention_probs_dropout_prob (instead of the config's 0), dropout_seed, "
               "step (the model case; a training case's step s is the number of updates before it), how a call is "
               "keyed and what it keeps, and calls: each call of one forward in order (call k is the k-th, from 0) "
               "with what it drops, its shape, an element's flat index and the first traced name it changes",
    "tokenizer": "a tokenizer case's constants hold the vocabulary (vocab_tokens, or vocab_file: the checkpoint's "
                 "vocab.txt in the golden directory, with its SHA-256), every setting and rule (cjk_ranges, what "
                 "max_input_chars_per_word counts, what offsets index), the texts (one padded batch) and the text "
                 "pairs (truncated longest_first to pair_max_length, padded, written under pair/); the verdict names "
                 "the text (or pair) and position of the first token that differs",
}


# Every field of a case a port reads, with its possible values (the manifest's "fields"; docs/porting.md).
# A dict lists the values one by one (JSON's spelling: true, null); a string says what any value is. A
# string value may be a listed name followed by ":" or a space and its rule spelled out (pair_truncation's
# "longest_first: budget = ..."): match its first word, never the whole sentence, which may grow.
FIELDS = {
    "name": "the case's name: an op, layer or model name, a [variant] after it where one name has several",
    "dtype": {"float64": "computed in float64 (the reference)", "float32": "the same inputs rounded, run in float32",
              "int64": "a tokenizer case: integers, equal or wrong"},
    "kind": {"op": "a leaf op: inputs, parameters w b gamma beta table, out, grad/out, grads",
             "layer": "a layer of BERT, parameters under (relative) Hugging Face names",
             "model": "a whole model: the trace's intermediates in forward_order and backward_order",
             "generator": "the dropout generator alone (reading.generator): no forward, no gradient",
             "training": "steps of training (reading.training)", "tokenizer": "the tokenizer (reading.tokenizer)",
             "checkpoint": "a real checkpoint's traced forward (the manifest's checkpoint entry)"},
    "file": "the case's safetensors file, a relative path; a port's results go to the same path",
    "description": "what the case computes, for a reader: nothing to parse",
    "constants": "what the case reads besides its tensors (the constants.* fields)",
    "tensors": "name, role (the manifest's roles), shape, dtype and, for some gradients, floor",
    "forward_order": "a model: its intermediates in the order the forward makes them",
    "backward_order": "a model: grad/<intermediate> in the order the backward makes them",
    "tensor.floor": "the scale a gradient that is 0 in exact arithmetic is measured against (the error)",
    "constants.eps": "a number: LayerNorm's epsilon (op layernorm), AdamW's (training)",
    "constants.hidden_act": {"gelu": "exact: x/2 (1 + erf(x / sqrt 2))",
                             "gelu_new": "tanh: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))"},
    "constants.padding_idx": "an integer: the table row the lookup gives no gradient",
    "constants.num_attention_heads": "an integer: the heads a layer case splits H into",
    "constants.p": "a number in [0, 1): a dropout probability (the dropout op, the generator's keep, the "
                   "classifier, where 0.0 means off)",
    "constants.dropout_seed": "an integer: the seed of DropoutStream(dropout_seed, step)",
    "constants.step": "an integer: the training step whose keys a case uses (updates done before it)",
    "constants.call": "an integer: which call of the step keys the dropout op (from 0)",
    "constants.dropout": "0.0: dropout off; an object (the constants.dropout.* fields): dropout on (reading.dropout)",
    "constants.dropout.hidden_dropout_prob": "a number in (0, 1): p of every call but the attention probabilities'",
    "constants.dropout.attention_probs_dropout_prob": "a number in (0, 1): p of the attention probabilities",
    "constants.dropout.dropout_seed": "an integer: every call's key derives from it",
    "constants.dropout.step": "an integer (a model case): the step whose keys the forward uses",
    "constants.dropout.keys": "how call k of step s is keyed, what it keeps and how it scales: read once",
    "constants.dropout.p": "which p each call takes: read once",
    "constants.dropout.calls": "a list, one object per call of one forward, in order (call k is the k-th, from "
                               "0): drops, shape, index (an element's flat index) and first_seen_at (the first "
                               "traced name it changes)",
    "constants.steps": "an integer: the updates a training case runs",
    "constants.warmup_steps": "an integer (schedule)", "constants.total_steps": "an integer (schedule)",
    "constants.peak_lr": "a number (schedule)", "constants.max_grad_norm": "a number (clip)",
    "constants.weight_decay": "a number (adamw, no_decay)", "constants.betas": "[b1, b2] (adamw)",
    "constants.bias_correction": {"true": "m_hat, v_hat as in adamw", "false": "m and v as they are"},
    "constants.frozen": "which parameters the optimizer leaves alone, and why: read once",
    "constants.schedule": "the learning rate of update s: read once",
    "constants.clip": "the clipping rule: read once", "constants.adamw": "the update rule: read once",
    "constants.no_decay": "which parameters take no weight decay: read once",
    "constants.same_batch_every_step": {"true": "every step runs on the case's one batch"},
    "constants.pad_token_id": "an integer: [PAD]'s id",
    "constants.pad_at": "where [PAD] also sits at a real position: read once",
    "constants.vocab": "which vocabulary, for a reader", "constants.vocab_tokens": "the vocabulary, id by id",
    "constants.vocab_file": "the vocabulary's file in the golden directory, one token a line, id by line",
    "constants.vocab_sha256": "that file's SHA-256",
    "constants.do_lower_case": {"true": "lower-case (and strip accents unless strip_accents is false)",
                                "false": "keep case (strip accents only if strip_accents is true)"},
    "constants.strip_accents": {"null": "as do_lower_case", "true": "strip (NFD, drop Mn)", "false": "keep"},
    "constants.tokenize_chinese_chars": {"true": "spaces around every code point in cjk_ranges", "false": "no"},
    "constants.cjk_ranges": "a list of \"U+XXXX-U+YYYY\", inclusive",
    "constants.max_input_chars_per_word": "an integer: a longer word is one [UNK]",
    "constants.max_input_chars_per_word_counts": "what that limit counts: read once",
    "constants.special_tokens": "where [CLS] and [SEP] go: read once",
    "constants.offsets": "what offset_mapping indexes: read once",
    "constants.padding": {"longest": "pad every text to the batch's longest, [PAD] id, mask 0"},
    "constants.texts": "the batch's texts", "constants.text_pairs": "the pairs' texts, [first, second]",
    "constants.pair_max_length": "an integer: the pairs' max_length",
    "constants.pair_truncation": {"longest_first": "the rule after the colon (docs/porting.md)"},
    "constants.truncation": {"longest_first": "to max_length, as its text after the name says"},
}


def field_value(value) -> str:
    """What a field's value is listed under in a FIELDS dict: a string's first word (up to ":" or a
    space), JSON's spelling of anything else (true, null)."""
    return re.match(r"[^:\s]*", value).group(0) if isinstance(value, str) else json.dumps(value)


def manifest_path(directory) -> str:
    return os.path.join(directory, MANIFEST)


def read_manifest(directory) -> dict:
    """The manifest of a golden directory, or a clear error: none there, not JSON, another schema
    or version."""
    path = manifest_path(directory)
    if not os.path.isdir(directory):
        raise InputError(f"golden directory {directory} does not exist (write one with `npbert golden --out DIR`)")
    if not os.path.isfile(path):
        raise InputError(f"{directory} has no {MANIFEST}: not a golden directory (`npbert golden --out DIR` writes one)")
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, *JSON_ERRORS) as e:                # RecursionError: nested too deep
        raise InputError(f"{path} is not a readable JSON manifest: {str(e) or type(e).__name__}") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise InputError(f"{path} is not an npbert golden manifest (no \"schema\": \"{SCHEMA}\")")
    if manifest.get("version") != VERSION:
        raise InputError(f"{path} is golden schema version {manifest.get('version')!r}; this npbert reads version "
                         f"{VERSION}: regenerate the goldens with this npbert (`npbert golden`) or use the npbert "
                         "that wrote them")
    check_manifest(manifest, path)
    return manifest


def check_manifest(manifest: dict, path) -> None:
    """Every key conform reads, of the type it reads, and every file and tensor name a relative
    path inside the directory (an absolute or `..` name would read outside it): one clear error
    naming the first that is not, never a KeyError half-way through a comparison."""
    def need(ok, what):
        if not ok:
            raise InputError(f"{path}: {what}: a damaged manifest (regenerate it with `npbert golden`)")
    tolerance = manifest.get("tolerance")
    need(isinstance(tolerance, dict) and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1
                                             for v in tolerance.values()), "\"tolerance\" is not {dtype: number}")
    cases = manifest.get("cases")
    need(isinstance(cases, list) and cases, "no \"cases\" list (or an empty one)")
    for i, case in enumerate(cases):
        need(isinstance(case, dict) and all(isinstance(case.get(k), str) for k in ("name", "dtype", "kind", "file")),
             f"case {i} lacks one of \"name\", \"dtype\", \"kind\", \"file\" (strings)")
        need(case["file"].endswith(".safetensors") and is_inside(case["file"]),
             f"case {case['name']!r} has file {case['file']!r}: not a relative .safetensors path inside the directory")
        tensors = case.get("tensors")
        need(isinstance(tensors, list) and all(isinstance(t, dict) and isinstance(t.get("name"), str) and
                                               isinstance(t.get("role"), str) for t in tensors),
             f"case {case['name']!r} has no \"tensors\" list of {{\"name\", \"role\"}}")
        bad = next((t["name"] for t in tensors if not is_inside(t["name"])), None)
        need(bad is None, f"case {case['name']!r} names a tensor {bad!r}: not a relative name")
        need(isinstance(case.get("constants", {}), dict), f"case {case['name']!r} has constants that are not an object")
        for key in ("forward_order", "backward_order"):
            need(isinstance(case.get(key, []), list), f"case {case['name']!r} has a {key} that is not a list")


def is_inside(name: str) -> bool:
    """A relative path that stays inside its directory: not absolute, no `..`, no empty part."""
    parts = name.replace("\\", "/").split("/")
    return bool(name) and not os.path.isabs(name) and "\0" not in name and \
        all(part not in ("", ".", "..") for part in parts) and not re.match(r"^[A-Za-z]:", name)


def is_golden_dir(directory) -> bool:
    try:
        read_manifest(directory)
    except InputError:
        return False
    return True


def tensor_error(got, want, floor: float = 0.0) -> tuple:
    """(max abs error, error relative to the tensor's scale) of a port's tensor against the golden
    one, as ERROR says: inf where an entry that must be equal is not, nan where the port has NaN.
    floor: the scale of a gradient that is 0 in exact arithmetic (the manifest's "floor")."""
    want64, got64 = np.asarray(want, np.float64), np.asarray(got, np.float64)
    max_abs = float(np.max(np.abs(got64 - want64), initial=0.0))      # NaN propagates
    if np.issubdtype(np.asarray(want).dtype, np.integer) or np.asarray(want).dtype == bool:
        return max_abs, 0.0 if np.array_equal(got64, want64) else float("inf")
    exact = np.abs(want64) >= MASK_MAGNITUDE
    if (got64[exact] != want64[exact]).any():
        return max_abs, float("inf")
    return max_abs, scaled_error(got64[~exact], want64[~exact], floor)
