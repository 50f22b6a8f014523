"""Checkpoints in Hugging Face's directory format (docs/checkpoints.md):

    config.json        BertConfig, HF field names
    model.safetensors  weights under HF BertForPreTraining names ("bert.…", "cls.…")
    vocab.txt          one WordPiece token per line, line number = id

load_pretrained reads npbert's own checkpoints and Hugging Face's (BertModel checkpoints without
the "bert." prefix, with or without pretraining heads). save_pretrained writes a directory that
`transformers.BertForPreTraining.from_pretrained` loads, and replaces it atomically: a crash
mid-save leaves the previous checkpoint as it was.
"""
from __future__ import annotations

import glob
import io
import os
import re
from collections import namedtuple
from collections.abc import Mapping

import numpy as np

from npbert import safetensors
from npbert.atomic import atomic_replace_dir
from npbert.config import BertConfig
from npbert.errors import CheckpointError
from npbert.model_params import WORD_EMBEDDINGS, param_shapes
from npbert.tokenizer import BertTokenizer
from npbert.tokenizer.files import read_tokenizer_files
from npbert.tokenizer.vocab import check_vocab

CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE = "config.json", "model.safetensors", "vocab.txt"
MLM_BIAS = "cls.predictions.bias"
DECODER_WEIGHT, DECODER_BIAS = "cls.predictions.decoder.weight", "cls.predictions.decoder.bias"
# integer buffers some HF checkpoints carry; they are not parameters
BUFFERS = ("bert.embeddings.position_ids", "bert.embeddings.token_type_ids")

Pretrained = namedtuple("Pretrained", "config params tokenizer")


# --- loading --------------------------------------------------------------------------------------

def load_pretrained(directory, dtype=np.float32, strict: bool = True) -> Pretrained:
    """Read a checkpoint directory -> Pretrained(config, params, tokenizer).

    params are keyed by npbert's (HF BertForPreTraining) names and cast to dtype; they hold the
    "cls.*" heads only if the checkpoint has them. tokenizer is None without vocab.txt.
    strict=False keeps tensors outside bert.* and cls.* (a fine-tuning head's "classifier.weight")
    instead of rejecting them."""
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        raise ValueError(f"dtype must be a floating-point type, got {dtype}")
    config = load_config(directory)
    params = npbert_names(safetensors.load_file(_require(directory, WEIGHTS_FILE)))
    check_params(config, params, strict, where=f"{directory}: the weights in {WEIGHTS_FILE}")
    with np.errstate(over="ignore"):                  # float64 1e300 -> float32 inf: named below, not warned
        params = {name: a.astype(dtype) for name, a in params.items()}
    check_finite(params, where=f"{directory}: the weights in {WEIGHTS_FILE}")
    tokenizer = BertTokenizer.from_pretrained(directory) if _has_vocab(directory, config) else None
    return Pretrained(config, params, tokenizer)


def check_checkpoint(directory) -> tuple:
    """-> (config, {npbert name: shape}): load_pretrained's checks of config.json against the
    weights' names, shapes and dtypes, and of vocab.txt, reading only the safetensors header.
    Tensors npbert does not know (a task head) are kept, as load_pretrained(strict=False)."""
    config = load_config(directory)
    header = safetensors.load_shapes(_require(directory, WEIGHTS_FILE))
    # stand-ins: each tensor's dtype and shape and no data (one zero, broadcast), so that the
    # renaming and the checks of a real load run on them unchanged
    params = npbert_names({name: np.broadcast_to(np.zeros((), dtype), shape)
                           for name, (dtype, shape) in header.items()})
    check_params(config, params, strict=False, where=f"{directory}: the weights in {WEIGHTS_FILE}")
    _has_vocab(directory, config)
    return config, {name: a.shape for name, a in params.items()}


def _has_vocab(directory, config) -> bool:
    """Whether directory has a vocab.txt; if it has, it must pass the tokenizer's own checks (so
    `npbert info` refuses what fill-mask would) and hold config.vocab_size tokens, with the tokens
    tokenizer.json adds after it (add_tokens: a model grown to len(tokenizer) rows)."""
    path = os.path.join(directory, VOCAB_FILE)
    if os.path.isfile(path):
        tokens, _, added = read_tokenizer_files(directory)          # vocab.txt's tokens, tokenizer.json's added
        size = len(check_vocab(tokens))
        beyond = sum(token_id >= size for token_id, _, _ in added)
        check_vocab_size(size + beyond, config, path + (f" with the {beyond} tokenizer.json adds" if beyond else ""))
    return os.path.isfile(path)


def _check_directory(directory):
    if os.path.isdir(directory):
        return
    if os.path.exists(directory):
        raise CheckpointError(f"{directory} is a file, not a checkpoint directory (config.json, model.safetensors, "
                              "vocab.txt)")
    parent, name = os.path.split(os.path.abspath(directory))
    left = sorted(glob.glob(glob.escape(os.path.join(parent, f".{name}.old-")) + "*"))
    hint = f"; a save was interrupted and left the previous checkpoint at {left[-1]}" if left else ""
    run, run_name = os.path.split(parent)
    replaced = sorted(glob.glob(glob.escape(os.path.join(run, f".{run_name}.replaced-")) + "*"))
    if replaced and not hint:                          # run_dir.py: a kill during --overwrite, before the new run saved
        hint = (f"; an interrupted --overwrite left the earlier run of {parent} at {replaced[-1]} (the next "
                f"`npbert pretrain` or `npbert finetune` with --out {parent} puts it back)")
    if os.path.exists(directory):
        raise CheckpointError(f"checkpoint {directory} is a file, not a checkpoint directory")
    raise CheckpointError(f"checkpoint directory {directory} does not exist{hint}")


def _require(directory, file_name) -> str:
    path = os.path.join(directory, file_name)
    if not os.path.isfile(path):
        hint = ""
        if file_name == WEIGHTS_FILE and os.path.isfile(os.path.join(directory, "pytorch_model.bin")):
            hint = ("; it has pytorch_model.bin, which npbert does not read: re-save it with transformers' "
                    "save_pretrained (safetensors is the default)")
        raise CheckpointError(f"no {file_name} in {directory}{hint}")
    return path


def load_config(directory) -> BertConfig:
    """A checkpoint directory's config.json, without reading the weights."""
    _check_directory(directory)
    path = _require(directory, CONFIG_FILE)
    try:
        return BertConfig.load(path)
    except (OSError, ValueError) as e:
        raise CheckpointError(str(e)) from None


def npbert_names(tensors: Mapping) -> dict:
    """HF checkpoint names -> npbert's: add the "bert." prefix if the checkpoint has none (a
    BertModel checkpoint), rename TF-style LayerNorm gamma/beta, drop integer buffers, and fold
    the tied decoder into the word embeddings / MLM bias after checking it matches them."""
    prefix = "" if any(n.startswith("bert.") for n in tensors) else "bert."
    params = {}
    for name, a in tensors.items():
        name = name if name.startswith(("bert.", "cls.")) else prefix + name
        if name.endswith("LayerNorm.gamma") or name.endswith("LayerNorm.beta"):
            name = name.rsplit(".", 1)[0] + (".weight" if name.endswith("gamma") else ".bias")
        if name not in BUFFERS:
            params[name] = a
    _untie(params, DECODER_WEIGHT, WORD_EMBEDDINGS)
    _untie(params, DECODER_BIAS, MLM_BIAS)
    return params


def _untie(params, tied, owner):
    """Drop params[tied], a copy of params[owner] (or take its place if owner is missing)."""
    if tied not in params:
        return
    a = params.pop(tied)
    if owner not in params:
        params[owner] = a
    elif a.shape != params[owner].shape or not np.array_equal(a, params[owner]):
        raise CheckpointError(f"{tied} differs from {owner}; npbert ties them, so they must be equal")


POOLER = ("bert.pooler.dense.weight", "bert.pooler.dense.bias")
# config.json fields read off the weights: field -> (tensor, axis, what the weights have)
FIELDS_IN_WEIGHTS = {
    "hidden_size": (WORD_EMBEDDINGS, 1, "are {} wide"),
    "vocab_size": (WORD_EMBEDDINGS, 0, "have {} word embeddings"),
    "max_position_embeddings": ("bert.embeddings.position_embeddings.weight", 0, "have {} positions"),
    "type_vocab_size": ("bert.embeddings.token_type_embeddings.weight", 0, "have {} token types"),
    "intermediate_size": ("bert.encoder.layer.0.intermediate.dense.weight", 0, "have feed-forward layers {} wide"),
}
LAYER = re.compile(r"bert\.encoder\.layer\.(\d+)\.")


def check_params(config: BertConfig, params: Mapping, strict: bool = True, where="the weights") -> None:
    """CheckpointError naming missing, wrong-shaped, non-float and unexpected tensors (strict=False:
    except those outside bert.* and cls.*, a task head's);
    first which config.json fields the weights contradict (usually the whole story), then the
    first few tensors of each problem and how many more. The pretraining heads are expected if any
    "cls.*" tensor is present."""
    shapes = {n: tuple(np.shape(a)) for n, a in params.items()}
    if count_layers(shapes) != config.num_hidden_layers:   # the whole story, and listing the tensors of
        raise CheckpointError(f"{where} do not match config.json. "  # num_hidden_layers 1e8 would never end
                              + ". ".join(fields_that_differ(config, shapes)))
    expected = param_shapes(config, heads=any(n.startswith("cls.") for n in params))
    # HF's token-classification and QA models have no pooler (add_pooling_layer=False)
    optional = set(POOLER) if not any(n in params for n in POOLER) else set()
    missing = [n for n in expected if n not in params and n not in optional]
    wrong = [f"{n}: expected {expected[n]}, found {shapes[n]}"
             for n in expected if n in params and shapes[n] != expected[n]]
    not_float = [f"{n} ({np.asarray(a).dtype})" for n, a in params.items()
                 if not np.issubdtype(np.asarray(a).dtype, np.floating)]
    # strict=False lets a task head through ("classifier.weight"), not a tensor of BERT's own
    unexpected = [n for n in params if n not in expected and (strict or n.startswith(("bert.", "cls.")))]
    problems = [f"{label}: {_some(names)}" for label, names in (("Missing tensors", missing), ("Wrong shapes", wrong),
                ("Tensors that are not floating point", not_float), ("Unexpected tensors", unexpected)) if names]
    if problems:
        raise CheckpointError(f"{where} do not match config.json. " + ". ".join(fields_that_differ(config, shapes)
                                                                                 + problems))


def fields_that_differ(config: BertConfig, shapes: Mapping) -> list:
    """'config.json says hidden_size 128 but the weights are 256 wide', for each size field the
    weights (npbert names -> shapes) contradict."""
    found = {field: (shapes[name][axis], what) for field, (name, axis, what) in FIELDS_IN_WEIGHTS.items()
             if name in shapes and len(shapes[name]) > axis}
    found["num_hidden_layers"] = (count_layers(shapes), "have {} layers")
    return [f"config.json says {field} {getattr(config, field)} but the weights {what.format(value)}"
            for field, (value, what) in found.items() if value != getattr(config, field)]


def check_finite(params: Mapping, where="the weights") -> None:
    """CheckpointError naming the tensors that hold NaN or inf: a diverged model predicts nan for
    everything, so it is refused when read, not after a whole evaluation."""
    bad = [name for name, a in params.items() if not np.isfinite(a).all()]
    if bad:
        raise CheckpointError(f"{where} hold NaN or inf in {len(bad)} of {len(params)} tensors ({_some(bad)}): "
                              "the model diverged or was damaged (or overflows the dtype it is read as)")


def count_layers(names) -> int:
    """The encoder layers the tensors' names reach: 1 + the highest bert.encoder.layer.N (0 if none)."""
    return 1 + max((int(m.group(1)) for m in map(LAYER.match, names) if m), default=-1)


def _some(items, limit=3) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return "; ".join(items[:limit]) + more


def count_tokens(vocab_txt: bytes) -> int:
    """Tokens in a vocab.txt: one per line, counted as BertTokenizer reads it (universal newlines)."""
    try:
        return len(io.TextIOWrapper(io.BytesIO(vocab_txt), encoding="utf-8").readlines())
    except UnicodeDecodeError as e:
        raise CheckpointError(f"vocabulary is not UTF-8 text: {e}") from None


def check_vocab_size(size: int, config: BertConfig, where) -> None:
    if size != config.vocab_size:
        raise CheckpointError(f"{where} has {size} tokens but config.json says vocab_size = {config.vocab_size}")


# --- saving ---------------------------------------------------------------------------------------

def save_pretrained(directory, config: BertConfig, params: Mapping, tokenizer_or_vocab=None,
                    extra_files: Mapping | None = None) -> None:
    """Write config.json, model.safetensors (params as they are, in their dtype), vocab.txt (if a
    tokenizer or vocabulary is given) and extra_files {file name: bytes or str} into directory,
    replacing any previous checkpoint there atomically.

    tokenizer_or_vocab: a tokenizer with a .vocab {token: id} (its save_pretrained, if it has one,
    adds tokenizer_config.json), a {token: id} dict, a list of tokens, or the path of a vocab.txt."""
    # extra tensors (a task head) are saved as they are
    check_params(config, params, strict=False, where=f"cannot save {directory}: the parameters")
    files = {CONFIG_FILE: config.to_json_string().encode("utf-8")}
    if tokenizer_or_vocab is not None:
        files[VOCAB_FILE] = vocab_bytes(tokenizer_or_vocab)
        tokenizer = hasattr(tokenizer_or_vocab, "save_pretrained")      # its len: the vocabulary and added tokens
        check_vocab_size(len(tokenizer_or_vocab) if tokenizer else count_tokens(files[VOCAB_FILE]), config,
                         "the tokenizer" if tokenizer else "the vocabulary")
    for name, data in (extra_files or {}).items():
        if os.path.basename(name) != name or name in (CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE, "", ".", ".."):
            raise CheckpointError(f"extra file name {name!r} must be a plain file name, not one of npbert's own")
        files[name] = data.encode("utf-8") if isinstance(data, str) else bytes(data)

    def fill(tmp):
        safetensors.save_file(params, os.path.join(tmp, WEIGHTS_FILE), metadata={"format": "pt"})
        if hasattr(tokenizer_or_vocab, "save_pretrained"):   # its tokenizer_config.json keeps do_lower_case
            tokenizer_or_vocab.save_pretrained(tmp)
        for name, data in files.items():                     # then the vocab.txt checked above
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)

    if os.path.exists(directory) and not os.path.isdir(directory):
        raise CheckpointError(f"{directory} exists and is not a directory")
    atomic_replace_dir(directory, fill)


def vocab_bytes(tokenizer_or_vocab) -> bytes:
    """The contents of vocab.txt for a tokenizer, {token: id}, list of tokens, or vocab.txt path."""
    v = tokenizer_or_vocab
    if isinstance(v, (str, os.PathLike)):
        with open(v, "rb") as f:
            data = f.read()
        return data if data.endswith(b"\n") or not data else data + b"\n"
    v = getattr(v, "vocab", v)
    if isinstance(v, Mapping):
        tokens = sorted(v, key=v.get)
        if [v[t] for t in tokens] != list(range(len(tokens))):
            raise CheckpointError("vocabulary ids must be 0, 1, ..., n-1 with no gaps or repeats")
    elif isinstance(v, (list, tuple)):
        tokens = list(v)
    else:
        raise CheckpointError(f"cannot make a vocab.txt from {type(tokenizer_or_vocab).__name__}; give a "
                              "tokenizer, a {token: id} dict, a list of tokens or a vocab.txt path")
    bad = [t for t in tokens if not isinstance(t, str) or "\n" in t or "\r" in t]
    if bad:
        raise CheckpointError(f"vocabulary token {bad[0]!r} cannot be written as one line of vocab.txt")
    return "".join(t + "\n" for t in tokens).encode("utf-8")
