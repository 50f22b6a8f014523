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

import numpy as np

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
    check_vocabulary(data_dir, vocab_tokens, "its counts would not be of the pieces the model reads")
    if options["corpus"] != "builtin" and corpus_sha256(options["corpus"]) != options.get("corpus_sha256"):
        raise DataError(f"the corpus {options['corpus']} has changed since {data_dir} was prepared: the counts would "
                        "not be of what the model saw")
    tokenizer = load_tokenizer(vocab_tokens, options["do_lower_case"])
    ids = tokenize_documents(tokenizer, read_documents(options, log=lambda *_: None))   # as prepare made them
    train, _ = split_documents(len(ids), options["heldout_fraction"], options["seed"])
    return [s for i in sorted(train) for s in ids[i]]


def check_vocabulary(data_dir, vocab_tokens, consequence) -> None:
    """DataError unless data_dir was prepared with vocab_tokens (the checkpoint's): its ids would
    be other pieces to the model; consequence says what that would do."""
    if load_vocab(os.path.join(data_dir, VOCAB_FILE)) != list(vocab_tokens):
        raise DataError(f"{data_dir} was prepared with another vocabulary than the checkpoint's: {consequence}")


def heldout_batches(data_dir, vocab_tokens, sequences: int, batch_size: int = 32):
    """The first `sequences` held-out IsNext instances of a prepared directory ([CLS] A [SEP] B [SEP],
    B the true next segment), with their masked pieces put back: the text as written, in batches
    (input_ids, token_type_ids, attention_mask). A DataError when there are none, or when the
    directory's vocabulary is not vocab_tokens (the checkpoint's)."""
    from npbert.data.pretraining_data import PretrainingData
    manifest = read_manifest(data_dir)
    check_vocabulary(data_dir, vocab_tokens, "its ids would be other pieces to the model")
    if "heldout" not in manifest["splits"]:
        raise DataError(f"{data_dir} has no held-out split (prepared with --heldout-fraction 0)")
    heldout = PretrainingData(data_dir, "heldout")
    rows = np.flatnonzero(heldout.arrays["next_sentence_labels"] == 0)[:sequences]     # IsNext
    if len(rows) == 0:
        raise DataError(f"{data_dir}'s held-out split has no IsNext instance")
    return unmasked_batches(heldout.arrays, rows, batch_size)                          # checked now, read lazily


def unmasked_batches(arrays, rows, batch_size):
    """The instances `rows` of a split's arrays in batches, their masked pieces put back."""
    from npbert.data.pretraining_data import make_batch
    for start in range(0, len(rows), batch_size):
        batch = make_batch(arrays, rows[start:start + batch_size])
        ids = batch["input_ids"]                                                        # (B, T)
        ids.reshape(-1)[batch["mlm_positions"]] = batch["mlm_labels"]                   # unmasked
        yield {k: batch[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
