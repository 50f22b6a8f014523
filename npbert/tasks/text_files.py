"""Sequence classification or regression examples from a CSV file (with a header) or a JSON
lines file (one object per line): `text`, optionally `text_pair`, and `label` (optional in
files to predict on). Other columns are ignored. The format follows the file name: .jsonl /
.json -> JSON lines, anything else -> CSV. write_jsonl writes records back as JSON lines."""
from __future__ import annotations

import json

from npbert.atomic import atomic_write
from npbert.errors import JSON_ERRORS, DataError
from npbert.tasks.files import json_kind, read_csv_rows, read_lines, where


def read_text_file(path) -> list:
    return read_jsonl(path) if str(path).endswith((".jsonl", ".json")) else read_csv(path)


def read_csv(path) -> list:
    records = []
    for index, row, n in read_csv_rows(path, ["text"]):
        get = lambda name: row[index[name]] if name in index else None  # noqa: E731
        records.append(dict(text=row[index["text"]], text_pair=get("text_pair"), label=get("label"),
                            where=where(path, n)))
    return records


def read_jsonl(path) -> list:
    records = []
    for n, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except JSON_ERRORS as e:
            raise DataError(f"{where(path, n)}: not a JSON object: {e}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
            raise DataError(f"{where(path, n)}: each line must be a JSON object with a string \"text\"")
        pair = obj.get("text_pair")
        if pair is not None and not isinstance(pair, str):
            raise DataError(f"{where(path, n)}: \"text_pair\" must be a string")
        label = obj.get("label")
        if isinstance(label, (bool, list, dict)):
            raise DataError(f"{where(path, n)}: \"label\" must be a string or a number, found {json_kind(label)}")
        records.append(dict(text=obj["text"], text_pair=pair, label=None if label is None else str(label),
                            where=where(path, n)))
    return records


def write_jsonl(records, path) -> None:
    """One JSON object per record (text, text_pair if it has one, label); UTF-8, written atomically."""
    def line(r):
        obj = {"text": r["text"]}
        if r.get("text_pair") is not None:
            obj["text_pair"] = r["text_pair"]
        obj["label"] = r["label"]
        return json.dumps(obj, ensure_ascii=False) + "\n"
    atomic_write(path, lambda f: f.write("".join(map(line, records)).encode("utf-8")))
