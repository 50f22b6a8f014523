"""SWAG-style multiple choice CSV (as the SWAG release): columns sent1 (the context), sent2
(the start of the next sentence), ending0..ending3, and label (absent in test files).
Choice i is the pair (sent1, sent2 + " " + ending_i), as Hugging Face's run_swag builds it."""
from __future__ import annotations

import csv
import io

from npbert.errors import DataError
from npbert.tasks.files import read_lines, require_columns, where

NUM_ENDINGS = 4


def read_swag(path) -> list:
    lines = read_lines(path)
    reader = csv.reader(io.StringIO("\n".join(lines) + "\n"))
    header = next(reader, None)
    if header is None:
        raise DataError(f"{path} is empty")
    endings = [f"ending{i}" for i in range(NUM_ENDINGS)]
    index = require_columns(path, header, ["sent1", "sent2"] + endings)
    records = []
    for row in reader:
        n = reader.line_num
        if not row:
            continue
        if len(row) != len(header):
            raise DataError(f"{where(path, n)}: {len(row)} fields, the header has {len(header)}")
        label = row[index["label"]] if "label" in index else None
        if label is not None and label not in {str(i) for i in range(NUM_ENDINGS)}:
            raise DataError(f"{where(path, n)}: label {label!r} is not one of 0..{NUM_ENDINGS - 1}")
        stem = row[index["sent2"]]
        records.append(dict(context=row[index["sent1"]], endings=[f"{stem} {row[index[e]]}".strip() for e in endings],
                            label=None if label is None else int(label), where=where(path, n)))
    return records
