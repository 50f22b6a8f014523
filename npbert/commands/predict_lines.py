"""What `npbert predict` reads and prints, for each format of example (npbert/tasks/formats.py):
one example per line of plain text, its fields separated by tabs, and one line per prediction.

    sequence classification   text            or  text<TAB>text_pair   ->  label<TAB>probability
    regression                the same                                  ->  number
    token classification      words separated by spaces                 ->  word/tag word/tag ...
    question answering        question<TAB>context                      ->  answer<TAB>probability
    multiple choice           context<TAB>ending 1<TAB>ending 2 ...     ->  index<TAB>probability<TAB>ending

A blank line is kept in its place as None, so that the predictions line up with the input
(`npbert predict` prints EMPTY for it).
"""
from __future__ import annotations

import numpy as np

from npbert.errors import DataError
from npbert.ops import softmax_forward
from npbert.tasks.formats import CHOICES, SCORES, SENTENCES, SPANS, TAGS

EMPTY = "(empty)"                        # the prediction for a blank line
PROBABILITY = r"(0\.\d{3}|1\.000|nan)"     # as to_line prints it


class Lines:
    """One format's lines: its examples read from them, its predictions printed as them."""
    line_fields = ""                     # what one line of input holds
    line_printed = ""                    # a regular expression that every line to_line prints matches

    def from_line(self, fields, line, n, where) -> dict | None:
        """A line's tab-separated fields -> an example, or None if they do not fit line_fields."""
        raise NotImplementedError

    def to_line(self, example, output, prediction) -> str:
        """The line printed for a prediction."""
        raise NotImplementedError


class SentenceLines(Lines):
    line_fields, line_printed = "text[<TAB>text_pair]", rf"[^\t]*\t{PROBABILITY}"

    def from_line(self, fields, line, n, where) -> dict | None:
        if len(fields) > 2:
            return None
        return dict(text=fields[0], text_pair=fields[1] if len(fields) == 2 else None, where=where)

    def to_line(self, example, output, prediction) -> str:
        return f"{prediction}\t{top_probability(output):.3f}"


class ScoreLines(SentenceLines):
    line_printed = r"-?(\d+\.\d{4}|inf|nan)"

    def to_line(self, example, output, prediction) -> str:
        return f"{prediction:.4f}"


class TagLines(Lines):
    line_fields, line_printed = "words separated by spaces", r"\S+/\S+( \S+/\S+)*"

    def from_line(self, fields, line, n, where) -> dict:
        return dict(words=line.split(), tags=None, where=where)

    def to_line(self, example, output, prediction) -> str:
        return " ".join(f"{w}/{t}" for w, t in zip(example["words"], prediction))


class SpanLines(Lines):
    line_fields, line_printed = "question<TAB>context", rf"[^\t]*\t{PROBABILITY}"

    def from_line(self, fields, line, n, where) -> dict | None:
        if len(fields) != 2:
            return None
        return dict(id=str(n), question=fields[0], context=fields[1], answers=[], where=where)

    def to_line(self, example, output, prediction) -> str:
        return f"{prediction['text']}\t{prediction['probability']:.3f}"


class ChoiceLines(Lines):
    line_fields, line_printed = "context<TAB>ending<TAB>ending ...", rf"\d+\t{PROBABILITY}\t.*"

    def from_line(self, fields, line, n, where) -> dict | None:
        if len(fields) < 3:
            return None
        return dict(context=fields[0], endings=fields[1:], label=None, where=where)

    def to_line(self, example, output, prediction) -> str:
        return f"{prediction}\t{top_probability(output):.3f}\t{example['endings'][prediction]}"


# A task's lines are its format's: LINES[task.format].
LINES = {SENTENCES: SentenceLines(), SCORES: ScoreLines(), TAGS: TagLines(), SPANS: SpanLines(),
         CHOICES: ChoiceLines()}


def top_probability(logits) -> float:
    """The softmax probability of the highest of one example's logits (K,), in float64."""
    return float(softmax_forward(np.asarray(logits, np.float64))[0].max())


def examples_from_lines(task_lines: Lines, lines, source="<stdin>") -> list:
    """-> one example per line, None for a blank one (DataError if every line is blank)."""
    examples = []
    for n, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            examples.append(None)
            continue
        where, fields = f"{source}:{n}", line.split("\t")
        example = task_lines.from_line(fields, line, n, where)
        if example is None:
            raise DataError(f"{where}: expected {task_lines.line_fields}, found {len(fields)} tab-separated field(s)")
        examples.append(example)
    if not any(examples):
        raise DataError(f"{source}: no text to predict on")
    return examples
