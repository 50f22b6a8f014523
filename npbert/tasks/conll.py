"""CoNLL-2003 style tagging files: one word per line with its tag in the last column
("EU NNP B-NP B-ORG"), a blank line between sentences, -DOCSTART- lines skipped. A file with
one column (words only) is read with tags None, for prediction."""
from __future__ import annotations

from npbert.errors import DataError
from npbert.tasks.files import read_lines, where

DOCSTART = "-DOCSTART-"


def read_conll(path) -> list:
    records, words, tags, start, columns = [], [], [], 1, None

    def flush():
        if words:
            records.append(dict(words=list(words), tags=list(tags) if columns > 1 else None,
                                where=where(path, start)))
        words.clear()
        tags.clear()
    for n, line in enumerate(read_lines(path), start=1):
        fields = line.split()
        if not fields or fields[0] == DOCSTART:
            flush()
            continue
        if columns is None:
            columns = len(fields)
        if (len(fields) > 1) != (columns > 1):
            raise DataError(f"{where(path, n)}: {len(fields)} column(s), but the file started with {columns}: "
                            "every line needs a word and a tag (or every line a word only)")
        if not words:
            start = n
        words.append(fields[0])
        tags.append(fields[-1])
    flush()
    return records
