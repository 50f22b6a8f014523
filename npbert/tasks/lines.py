"""Examples from plain lines of text, for `npbert predict`: one example per line, fields
separated by tabs, as the task's format reads them (formats.py, its line_fields):

    sequence classification   text            or  text<TAB>text_pair
    token classification      words separated by spaces
    question answering        question<TAB>context
    multiple choice           context<TAB>ending 1<TAB>ending 2 ...

A blank line is kept in its place as None, so that the predictions line up with the input
(`npbert predict` prints EMPTY for it).
"""
from __future__ import annotations

from npbert.errors import DataError

EMPTY = "(empty)"                        # the prediction for a blank line


def examples_from_lines(format, lines, source="<stdin>") -> list:
    """-> one example per line, None for a blank one (DataError if every line is blank)."""
    examples = []
    for n, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            examples.append(None)
            continue
        where, fields = f"{source}:{n}", line.split("\t")
        example = format.from_line(fields, line, n, where)
        if example is None:
            raise DataError(f"{where}: expected {format.line_fields}, found {len(fields)} tab-separated field(s)")
        examples.append(example)
    if not any(examples):
        raise DataError(f"{source}: no text to predict on")
    return examples
