"""Minimal pairs in BLiMP's JSON-lines format (Warstadt et al. 2020, github.com/alexwarstadt/blimp,
`data/*.jsonl`, one file per paradigm): one pair per line,

    {"sentence_good": "...", "sentence_bad": "...", "field": "morphology",
     "linguistics_term": "anaphor_agreement", "UID": "anaphor_gender_agreement", "pairID": "0", ...}

field (syntax, morphology, semantics, ...), linguistics_term (the phenomenon) and UID (the
paradigm) group the accuracies; other keys are ignored. A path is one such file or a directory
of them (its *.jsonl files, in name order; none in subdirectories).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from npbert.data.progress import Progress
from npbert.errors import DataError

REQUIRED = ("sentence_good", "sentence_bad", "field", "linguistics_term", "UID", "pairID")
MAX_LINE_BYTES = 1 << 20        # a minimal pair is a few hundred bytes; a longer line is not one


@dataclass(frozen=True)
class MinimalPair:
    good: str
    bad: str
    field: str          # syntax, morphology, semantics, syntax_semantics, ...
    phenomenon: str     # BLiMP's linguistics_term
    paradigm: str       # BLiMP's UID
    pair_id: str
    where: str          # "file:line", for messages


PROGRESS_SECONDS = 10.0        # a line at most this often while minimal pairs are read, tokenized and scored


def read_pairs(path, say=None) -> list:
    """Every pair of a JSON-lines file or of a directory's *.jsonl files; a DataError naming the
    file and line of the first malformed one, or the path when it holds no pair at all. say: where
    a line of progress goes every 10 s of a long read (None: nowhere)."""
    files = pair_files(path)
    progress = Progress(say or (lambda line: None), f"reading {path}", unit="pairs", every=PROGRESS_SECONDS)
    pairs = []
    for f in files:
        pairs += read_pair_file(f, lambda n: progress.update(len(pairs) + n))
    if not pairs:
        raise DataError(f"{path} holds no minimal pairs")
    return pairs


def pair_files(path) -> list:
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if f.endswith(".jsonl") and os.path.isfile(os.path.join(path, f)))
        if not files:
            raise DataError(f"{path} is a directory with no .jsonl files of minimal pairs in it")
        return files
    if not os.path.exists(path):
        raise DataError(f"minimal pairs not found: {path}")
    if not os.path.isfile(path):
        raise DataError(f"{path} is not a regular file (minimal pairs are read from a .jsonl file or a directory)")
    return [path]


def read_pair_file(path, progress=None) -> list:
    """progress(pairs read so far) after each line."""
    pairs = []
    with open(path, "rb") as f:
        for number, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
            where = f"{path}:{number}"
            if len(raw) > MAX_LINE_BYTES:
                raise DataError(f"{where}: the line is longer than {MAX_LINE_BYTES:,} bytes: not a minimal pair")
            if raw.strip():
                pairs.append(parse_pair(raw, where))
                if progress is not None:
                    progress(len(pairs))
    return pairs


def parse_pair(raw: bytes, where: str) -> MinimalPair:
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise DataError(f"{where}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: not a JSON object ({e.msg}, column {e.colno})") from None
    except RecursionError:
        raise DataError(f"{where}: not a JSON object (nested too deep)") from None
    except ValueError as e:                            # an integer of more digits than Python converts
        raise DataError(f"{where}: not a JSON object ({str(e)[:120]})") from None
    if not isinstance(record, dict):
        raise DataError(f"{where}: a line must be a JSON object with {', '.join(REQUIRED)}")
    missing = [k for k in REQUIRED if k not in record]
    if missing:
        raise DataError(f"{where}: the pair has no {', '.join(missing)}")
    for key in ("sentence_good", "sentence_bad", "field", "linguistics_term", "UID"):
        if not isinstance(record[key], str) or not record[key].strip():
            raise DataError(f"{where}: {key} must be a non-empty string, got {record[key]!r}")
    if not isinstance(record["pairID"], (str, int)) or isinstance(record["pairID"], bool):
        raise DataError(f"{where}: pairID must be a string or an integer, got {record['pairID']!r}")
    return MinimalPair(record["sentence_good"], record["sentence_bad"], record["field"], record["linguistics_term"],
                       record["UID"], str(record["pairID"]), where)
