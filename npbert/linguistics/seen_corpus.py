"""The sentences a pretrained BERT saw, as piece ids: what the counting baselines count.

A directory made by `npbert prepare` (or a run's OUT/data) records in its manifest the corpus,
the vocabulary, the casing and the seed of its held-out split; the training documents are read
again from the corpus, split as prepare split them, and tokenized with the same vocabulary, so
that a baseline counts exactly the sentences the BERT was trained on (not the held-out ones,
and once each: the dupe_factor passes repeat the same text).
"""
from __future__ import annotations

import json
import os

from npbert.data.prepare import (corpus_sha256, load_tokenizer, read_documents, split_documents,
                                 tokenize_documents)
from npbert.data.shards import VOCAB_FILE, read_manifest
from npbert.errors import DataError
from npbert.tokenizer import load_vocab


def pretraining_data_of(checkpoint_dir) -> str | None:
    """The prepared data a checkpoint of `npbert pretrain` was trained on, when it can be told:
    its training state's --data (or the run's OUT/data), else a `data` directory beside it."""
    state = os.path.join(checkpoint_dir, "training_state.json")
    candidates = []
    try:
        with open(state, encoding="utf-8") as f:
            options = json.load(f).get("options", {})
        candidates.append(options.get("data") or os.path.join(options.get("out") or "", "data"))
    except (OSError, ValueError, AttributeError):
        pass
    candidates.append(os.path.join(os.path.dirname(os.path.abspath(checkpoint_dir)), "data"))
    return next((c for c in candidates if c and os.path.isfile(os.path.join(c, "manifest.json"))), None)


def training_sentences(data_dir, vocab_tokens) -> list:
    """The training split's sentences of a prepared directory, as lists of piece ids of its
    vocabulary, which must be vocab_tokens (the checkpoint's)."""
    manifest = read_manifest(data_dir)
    options = manifest["options"]
    if load_vocab(os.path.join(data_dir, VOCAB_FILE)) != list(vocab_tokens):
        raise DataError(f"{data_dir} was prepared with another vocabulary than the checkpoint's: its counts would "
                        "not be of the pieces the model reads")
    if options["corpus"] != "builtin" and corpus_sha256(options["corpus"]) != options.get("corpus_sha256"):
        raise DataError(f"the corpus {options['corpus']} has changed since {data_dir} was prepared: the counts would "
                        "not be of what the model saw")
    tokenizer = load_tokenizer(vocab_tokens, options["do_lower_case"])
    ids = tokenize_documents(tokenizer, read_documents(options, log=lambda *_: None))   # as prepare made them
    train, _ = split_documents(len(ids), options["heldout_fraction"], options["seed"])
    return [s for i in sorted(train) for s in ids[i]]
