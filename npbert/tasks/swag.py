"""SWAG-style multiple choice CSV (as the SWAG release): columns sent1 (the context), sent2
(the start of the next sentence), ending0..ending3, and label (absent in test files).
Choice i is the pair (sent1, sent2 + " " + ending_i), as Hugging Face's run_swag builds it."""
from __future__ import annotations

from npbert.errors import DataError
from npbert.tasks.files import read_csv_rows, where

NUM_ENDINGS = 4


def read_swag(path) -> list:
    endings = [f"ending{i}" for i in range(NUM_ENDINGS)]
    records = []
    for index, row, n in read_csv_rows(path, ["sent1", "sent2"] + endings):
        label = row[index["label"]] if "label" in index else None
        if label is not None and label not in {str(i) for i in range(NUM_ENDINGS)}:
            raise DataError(f"{where(path, n)}: label {label!r} is not one of 0..{NUM_ENDINGS - 1}")
        stem = row[index["sent2"]]
        records.append(dict(context=row[index["sent1"]], endings=[f"{stem} {row[index[e]]}".strip() for e in endings],
                            label=None if label is None else int(label), where=where(path, n)))
    return records
