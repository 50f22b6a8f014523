"""Shard files: pretraining instances packed into small-integer arrays, one .npz per shard,
written atomically; manifest.json describing them. See docs/data.md for the format.

Each shard holds n instances padded to max_seq_length L and max_predictions_per_seq P:

    input_ids             (n, L) uint16 (int32 if the vocabulary has more than 65,536 tokens), pad id after `lengths`
    token_type_ids        (n, L) int8      0 for [CLS] A [SEP], 1 for B [SEP], 0 in the padding
    lengths               (n,)   int16     real tokens per row
    masked_lm_positions   (n, P) int16     ascending positions of the predicted tokens, 0 after num_masked
    masked_lm_ids         (n, P) like input_ids: the original ids there, 0 after num_masked
    num_masked            (n,)   int16
    next_sentence_labels  (n,)   int8      0 = IsNext, 1 = NotNext
"""
from __future__ import annotations

import json
import os
import zipfile

import numpy as np

from npbert.atomic import atomic_write, file_sha256  # noqa: F401  (re-exported: the shards' checksums)
from npbert.data.instances import DEFAULT_MASK_MIX
from npbert.errors import JSON_ERRORS, DataError

FORMAT = "npbert-pretraining-data"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
VOCAB_FILE = "vocab.txt"
# options added after format_version 1: a manifest without one was made with this value
OPTIONS_ADDED_LATER = dict(mask_mix=DEFAULT_MASK_MIX, corpus_sha256=None, vocab_file_sha256=None)
FIELDS = ("input_ids", "token_type_ids", "lengths", "masked_lm_positions", "masked_lm_ids", "num_masked",
          "next_sentence_labels")


def id_dtype(vocab_size):
    return np.dtype(np.uint16) if vocab_size <= 1 << 16 else np.dtype(np.int32)


def pack_instances(instances, max_seq_length, max_predictions_per_seq, vocab_size, pad_id) -> dict:
    """list of instances.Instance -> the shard arrays (see the module docstring)."""
    n, L, P = len(instances), max_seq_length, max_predictions_per_seq
    ids = id_dtype(vocab_size)
    arrays = dict(
        input_ids=np.full((n, L), pad_id, dtype=ids),
        token_type_ids=np.zeros((n, L), dtype=np.int8),
        lengths=np.zeros(n, dtype=np.int16),
        masked_lm_positions=np.zeros((n, P), dtype=np.int16),
        masked_lm_ids=np.zeros((n, P), dtype=ids),
        num_masked=np.zeros(n, dtype=np.int16),
        next_sentence_labels=np.zeros(n, dtype=np.int8),
    )
    for r, inst in enumerate(instances):
        length, k = len(inst.tokens), len(inst.masked_lm_positions)
        arrays["input_ids"][r, :length] = inst.tokens
        arrays["token_type_ids"][r, inst.num_a + 2:length] = 1
        arrays["lengths"][r] = length
        arrays["masked_lm_positions"][r, :k] = inst.masked_lm_positions
        arrays["masked_lm_ids"][r, :k] = inst.masked_lm_labels
        arrays["num_masked"][r] = k
        arrays["next_sentence_labels"][r] = inst.next_sentence_label
    return arrays


# --- files, written atomically (npbert.atomic) ----------------------------------------------------

def write_shard(path, arrays) -> None:
    atomic_write(path, lambda f: np.savez(f, **{k: arrays[k] for k in FIELDS}))


def read_shard(path) -> dict:
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in FIELDS if k not in z.files]
            if missing:
                raise DataError(f"shard {path} lacks the array(s) {', '.join(missing)}")
            return {k: z[k] for k in FIELDS}
    except FileNotFoundError:
        raise DataError(f"shard {path} is missing") from None
    except EOFError:                                   # a file of zero bytes
        raise DataError(f"shard {path} is empty (0 bytes): prepare the data again") from None
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        if isinstance(e, DataError):
            raise
        raise DataError(f"shard {path} is unreadable ({e})") from None


def write_json(path, obj) -> None:
    atomic_write(path, lambda f: f.write((json.dumps(obj, indent=2) + "\n").encode("utf-8")))


def read_manifest(directory) -> dict:
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise DataError(f"no {MANIFEST} in {directory}: not a prepared pretraining data directory "
                        f"(make one with `npbert prepare --out {directory}`)") from None
    except JSON_ERRORS as e:
        raise DataError(f"{path} is not valid JSON ({str(e)[:200]})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DataError(f"{path} is not an npbert pretraining manifest (format != {FORMAT!r})")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise DataError(f"{path} has format_version {manifest.get('format_version')!r}; this npbert reads "
                        f"version {FORMAT_VERSION}: prepare the data again")
    if isinstance(manifest.get("options"), dict):
        manifest["options"] = {**OPTIONS_ADDED_LATER, **manifest["options"]}
    check_manifest(manifest, path)
    return manifest


def _is_int(low):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _is_shard_list(shards) -> bool:
    """[{"file": a plain file name in the directory, "instances": a count, or null until written}, ...]"""
    return isinstance(shards, list) and all(
        isinstance(s, dict) and isinstance(s.get("file"), str) and s["file"] == os.path.basename(s["file"])
        and s["file"] not in ("", ".", "..") and (s.get("instances") is None or _is_int(0)(s.get("instances")))
        for s in shards)


# What the readers of a manifest index without looking, each with what it must be:
# (keys, check, what it must be, whether it may be absent).
MANIFEST_FIELDS = (
    (("complete",), lambda v: isinstance(v, bool), "true or false", False),
    (("vocab_size",), _is_int(1), "an integer >= 1", False),
    (("vocab_sha256",), lambda v: isinstance(v, str), "a string", False),
    (("options",), lambda v: isinstance(v, dict), "an object", False),
    (("options", "max_seq_length"), _is_int(1), "an integer >= 1", False),
    (("options", "max_predictions_per_seq"), _is_int(0), "an integer >= 0", False),
    (("options", "mask_mix"), lambda v: isinstance(v, str), "a string", False),
    (("options", "do_lower_case"), lambda v: isinstance(v, bool), "true or false", True),   # absent: true
    (("splits",), lambda v: isinstance(v, dict) and all(isinstance(s, dict) for s in v.values()),
     "an object of splits", False),
)
_MISSING = object()


def check_manifest(manifest: dict, path) -> None:
    """DataError naming the first field of the manifest that is missing or of the wrong type (a
    manifest edited by hand or by another tool): before, a KeyError or TypeError traceback."""
    for keys, fits, want, optional in MANIFEST_FIELDS:
        value = manifest
        for key in keys:
            value = value.get(key, _MISSING) if isinstance(value, dict) else _MISSING
        if value is _MISSING and not optional:
            raise DataError(f"{path} has no {'.'.join(keys)}: prepare the data again")
        if value is not _MISSING and not fits(value):
            raise DataError(f"{path}: {'.'.join(keys)} must be {want}, got {json.dumps(value)[:80]}")
    for name, split in manifest["splits"].items():
        if not _is_shard_list(split.get("shards")):
            raise DataError(f"{path}: splits.{name}.shards must be a list of {{\"file\": a file name in the "
                            f"directory, \"instances\": a count}}, got {json.dumps(split.get('shards'))[:80]}")
