"""PretrainingData: read a prepared directory (manifest.json + shards + vocab.txt) and stream
model-ready batches in a reproducible, resumable order.

    data = PretrainingData("data/builtin")               # the training split
    for step, batch in enumerate(data.batches(32, seed=0, epoch=0, start=0)):
        out, cache = pretraining_forward(params, config, **batch)

The order of an epoch is a permutation drawn from (seed, epoch) alone, so batch k of an epoch
is the same whatever was read before it: a loop resumes exactly by asking for
batches(..., epoch=e, start=k). Every shard is read once, when the object is made.
"""
from __future__ import annotations

import os

import numpy as np

from npbert.data.shards import FIELDS, MANIFEST, VOCAB_FILE, file_sha256, read_manifest, read_shard
from npbert.errors import DataError
from npbert.tokenizer.vocab import load_vocab


class PretrainingData:
    def __init__(self, directory, split="train"):
        self.directory = directory
        self.manifest = read_manifest(directory)
        check_complete(self.manifest, directory)
        splits = self.manifest["splits"]
        if split not in splits:
            raise DataError(f"{directory} has no split {split!r}; it has {', '.join(splits)}")
        self.vocab_file = os.path.join(directory, VOCAB_FILE)
        check_vocab(self.manifest, self.vocab_file)
        self.vocab_size = int(self.manifest["vocab_size"])
        self.max_seq_length = int(self.manifest["options"]["max_seq_length"])
        self.do_lower_case = bool(self.manifest["options"].get("do_lower_case", True))  # as the text was tokenized
        self.mask_mix = self.manifest["options"]["mask_mix"]   # MASK/SAME/RND it was masked with
        self.instances = self.manifest["options"].get("instances", "pairs")   # pairs (older data), or sentences
        shards = [load_checked_shard(directory, entry, self.manifest) for entry in splits[split]["shards"]]
        self.arrays = {k: np.concatenate([s[k] for s in shards]) for k in FIELDS}
        if len(self) == 0:
            raise DataError(f"split {split!r} of {directory} holds no instances")

    def __len__(self):
        return len(self.arrays["lengths"])

    def num_batches(self, batch_size, drop_last=False) -> int:
        check_batch_size(batch_size)
        return len(self) // batch_size if drop_last else -(-len(self) // batch_size)

    def order(self, seed, epoch) -> np.ndarray:
        """The instance order of one epoch: a permutation from (seed, epoch) only."""
        return np.random.default_rng([int(seed), int(epoch)]).permutation(len(self))   # (n,)

    def batches(self, batch_size, seed, epoch=0, start=0, drop_last=False, trim=True):
        """Yield batches start, start+1, ... of epoch `epoch` (see make_batch)."""
        count = self.num_batches(batch_size, drop_last)
        order = self.order(seed, epoch)
        for b in range(start, count):
            yield make_batch(self.arrays, order[b * batch_size:(b + 1) * batch_size], trim)


def make_batch(arrays, rows, trim=True) -> dict:
    """Rows of the shard arrays -> keyword arguments of npbert.model.pretraining_forward.

    trim=True cuts T to the longest sequence in the batch (attention costs O(T^2), and shorter
    rows are only padding beyond their length); trim=False keeps T = max_seq_length.
    mlm_positions are flat indices b * T + t into the B*T tokens, row by row, ascending."""
    lengths = arrays["lengths"][rows].astype(np.int64)                                 # (B,)
    B = len(rows)
    T = int(lengths.max()) if trim else arrays["input_ids"].shape[1]
    input_ids = arrays["input_ids"][rows, :T].astype(np.int64)                         # (B, T)
    token_type_ids = arrays["token_type_ids"][rows, :T].astype(np.int64)               # (B, T)
    attention_mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.int64)       # (B, T)
    P = arrays["masked_lm_positions"].shape[1]
    predicted = np.arange(P)[None, :] < arrays["num_masked"][rows][:, None]            # (B, P)
    flat = arrays["masked_lm_positions"][rows].astype(np.int64) + T * np.arange(B)[:, None]  # (B, P)
    return dict(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                mlm_positions=flat[predicted],                                         # (N,)
                mlm_labels=arrays["masked_lm_ids"][rows][predicted].astype(np.int64),  # (N,)
                nsp_labels=arrays["next_sentence_labels"][rows].astype(np.int64))      # (B,)


def check_batch_size(batch_size):
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise DataError(f"batch_size must be a positive integer, got {batch_size!r}")


def check_complete(manifest, directory):
    if not manifest.get("complete"):
        raise DataError(f"{directory} was not prepared to the end (manifest says incomplete); "
                        f"run the same `npbert prepare` again to finish it")


def check_vocab(manifest, vocab_file):
    if not os.path.exists(vocab_file):
        raise DataError(f"{vocab_file} is missing; the shards' ids mean nothing without it")
    if file_sha256(vocab_file) != manifest["vocab_sha256"]:
        raise DataError(f"{vocab_file} is not the vocabulary the shards were made with "
                        f"(sha256 differs from {MANIFEST})")
    tokens = len(load_vocab(vocab_file))               # the model's vocab_size: 1e9 here would be a MemoryError
    if tokens != manifest["vocab_size"]:
        raise DataError(f"{MANIFEST} says vocab_size {manifest['vocab_size']}, but {vocab_file} has {tokens} tokens")


def load_checked_shard(directory, entry, manifest) -> dict:
    """Read one shard and check it against the manifest: count, shapes, id range."""
    path = os.path.join(directory, entry["file"])
    arrays = read_shard(path)
    n = len(arrays["lengths"])
    L, P = manifest["options"]["max_seq_length"], manifest["options"]["max_predictions_per_seq"]
    if n != entry["instances"]:
        raise DataError(f"shard {path} holds {n} instances, the manifest says {entry['instances']}")
    if arrays["input_ids"].shape != (n, L) or arrays["masked_lm_positions"].shape != (n, P):
        raise DataError(f"shard {path} has arrays of shape {arrays['input_ids'].shape} / "
                        f"{arrays['masked_lm_positions'].shape}, expected ({n}, {L}) / ({n}, {P})")
    if n and (int(arrays["input_ids"].max()) >= manifest["vocab_size"] or int(arrays["input_ids"].min()) < 0
              or int(arrays["lengths"].max()) > L or int(arrays["lengths"].min()) < 1):
        raise DataError(f"shard {path} holds ids or lengths outside the manifest's vocab_size / max_seq_length")
    check_masked_slots(arrays, path, P, manifest["vocab_size"])
    return arrays


def check_masked_slots(arrays, path, P, vocab_size) -> None:
    """DataError unless every instance predicts 0..P tokens (num_masked), each at a position inside
    its sequence (after [CLS], before its length) with an id of the vocabulary: a tampered count
    above P would turn padding slots into "predict [PAD] at position 0"."""
    num = arrays["num_masked"].astype(np.int64)                                     # (n,)
    if len(num) and (num.min() < 0 or num.max() > P):
        raise DataError(f"shard {path} has num_masked outside [0, {P}] (the manifest's max_predictions_per_seq)")
    predicted = np.arange(P)[None, :] < num[:, None]                                # (n, P)
    positions = arrays["masked_lm_positions"].astype(np.int64)                      # (n, P)
    lengths = arrays["lengths"].astype(np.int64)[:, None]                           # (n, 1)
    ids = arrays["masked_lm_ids"].astype(np.int64)                                  # (n, P)
    if np.any(predicted & ((positions < 1) | (positions >= lengths) | (ids < 0) | (ids >= vocab_size))):
        raise DataError(f"shard {path} has a masked position outside its sequence or a masked id outside the "
                        "vocabulary: prepare the data again")
