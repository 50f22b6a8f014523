"""GLUE tasks as the GLUE download script writes them: tab-separated, one example per line,
no quoting (as the original BERT run_classifier.py reads them, quotechar=None).

Each task names the columns it reads in the header line; CoLA's train and dev files have no
header and four columns: source, label, original label, sentence. Test files have no label
column: their examples get label None (for `npbert predict`).
"""
from __future__ import annotations

from npbert.errors import DataError
from npbert.tasks.files import read_lines, require_columns, where

# task -> (text column, pair column or None, label column); labels as in run_classifier.py
COLUMNS = {
    "sst-2": ("sentence", None, "label"),
    "mrpc": ("#1 String", "#2 String", "Quality"),
    "sts-b": ("sentence1", "sentence2", "score"),
    "qqp": ("question1", "question2", "is_duplicate"),
    "mnli": ("sentence1", "sentence2", "gold_label"),
    "qnli": ("question", "sentence", "label"),
    "rte": ("sentence1", "sentence2", "label"),
    "wnli": ("sentence1", "sentence2", "label"),
}
LABELS = {
    "sst-2": ("0", "1"), "cola": ("0", "1"), "mrpc": ("0", "1"), "qqp": ("0", "1"),
    "mnli": ("contradiction", "entailment", "neutral"),
    "qnli": ("entailment", "not_entailment"), "rte": ("entailment", "not_entailment"), "wnli": ("0", "1"),
    "sts-b": None,                                   # regression: a similarity score 0..5
}
COLA_COLUMNS = 4                                     # source, label, original label (* or empty), sentence


def read_glue(task, path) -> list:
    lines = read_lines(path)
    if task == "cola" and not (lines and lines[0].split("\t")[:2] == ["index", "sentence"]):
        return read_cola(path, lines)
    text_col, pair_col, label_col = COLUMNS.get(task, (None, None, None)) if task != "cola" else \
        ("sentence", None, "label")
    if text_col is None:
        raise DataError(f"unknown GLUE task {task!r}")
    if not lines:
        raise DataError(f"{path} is empty")
    header = lines[0].split("\t")
    needed = [text_col] + ([pair_col] if pair_col else [])
    index = require_columns(path, header, needed)
    label_i = index.get(label_col)                   # absent in test files
    records = []
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        columns = [index[c] for c in needed] + ([label_i] if label_i is not None else [])
        if max(columns) >= len(fields):
            raise DataError(f"{where(path, n)}: {len(fields)} tab-separated fields, the header has {len(header)}")
        records.append(dict(text=fields[index[text_col]], text_pair=fields[index[pair_col]] if pair_col else None,
                            label=fields[label_i] if label_i is not None else None, where=where(path, n)))
    return records


def read_cola(path, lines) -> list:
    records = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != COLA_COLUMNS:
            raise DataError(f"{where(path, n)}: CoLA lines have {COLA_COLUMNS} tab-separated columns (source, "
                            f"label, original label, sentence), this one has {len(fields)}")
        records.append(dict(text=fields[3], text_pair=None, label=fields[1], where=where(path, n)))
    return records
