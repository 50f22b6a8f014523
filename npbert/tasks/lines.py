"""Examples from plain lines of text, for `npbert predict`: one example per line, fields
separated by tabs.

    sequence classification   text            or  text<TAB>text_pair
    token classification      words separated by spaces
    question answering        question<TAB>context
    multiple choice           context<TAB>ending 1<TAB>ending 2 ...
"""
from __future__ import annotations

from npbert.errors import DataError

FIELDS = dict(sequence_classification="text[<TAB>text_pair]", token_classification="words separated by spaces",
              question_answering="question<TAB>context", multiple_choice="context<TAB>ending<TAB>ending ...")


def examples_from_lines(kind, lines, source="<stdin>") -> list:
    examples = []
    for n, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        where, fields = f"{source}:{n}", line.split("\t")
        if kind == "sequence_classification" and len(fields) <= 2:
            examples.append(dict(text=fields[0], text_pair=fields[1] if len(fields) == 2 else None, where=where))
        elif kind == "token_classification":
            examples.append(dict(words=line.split(), tags=None, where=where))
        elif kind == "question_answering" and len(fields) == 2:
            examples.append(dict(id=str(n), question=fields[0], context=fields[1], answers=[], where=where))
        elif kind == "multiple_choice" and len(fields) >= 3:
            examples.append(dict(context=fields[0], endings=fields[1:], label=None, where=where))
        else:
            raise DataError(f"{where}: expected {FIELDS[kind]}, found {len(fields)} tab-separated field(s)")
    if not examples:
        raise DataError(f"{source}: no text to predict on")
    return examples
