"""What BertTokenizer returns: a dict of the arrays asked for (input_ids, token_type_ids, ...) that
also answers Hugging Face BatchEncoding's alignment questions, per row: tokens(), word_ids(),
sequence_ids(), and the maps between characters, tokens and words (char_to_token, token_to_chars,
word_to_tokens, ...), with the Rust Encoding's rules:

    a token's sequence is None for [CLS], [SEP] and padding; 0 or 1 (the side of a pair) otherwise
    char_to_token(c, s)   the first token of sequence s whose characters (start <= c < end) hold c
    word_to_tokens(w, s)  TokenSpan(first, last + 1) of the tokens of word w in sequence s
    token_to_chars(t)     CharSpan(start, end), None for a token in no sequence

Alignment is made only when first asked for (offsets cost a third of the tokenizer's time).
"""
from __future__ import annotations

from typing import NamedTuple

from npbert.errors import InputError


class CharSpan(NamedTuple):
    start: int
    end: int


class TokenSpan(NamedTuple):
    start: int
    end: int


class Alignment(NamedTuple):
    """One row, token by token (padding included): its strings, word and sequence (None where it
    has none) and (start, end) characters."""
    tokens: list
    word_ids: list
    sequence_ids: list
    offsets: list


class Encoding(dict):
    """A dict of the requested outputs; the methods need the alignment: [Alignment] per row, or a
    function that makes it on first use (None: made without one, as `BertTokenizer.pad` does)."""

    def __init__(self, data: dict, align=None, batched: bool = False):
        super().__init__(data)
        self._align, self._rows, self.is_batched = align, None, batched
        if isinstance(align, list):
            self._rows = align

    def __reduce__(self):
        """Pickled (and copied) with its alignment made, not the function that makes it."""
        rows = self._rows if self._rows is not None or self._align is None else self._align()
        return Encoding, (dict(self), rows, self.is_batched)

    def _row(self, batch_index: int) -> Alignment:
        if self._align is None:
            raise InputError("this encoding has no alignment (made by pad() from bare ids): encode the text")
        if self._rows is None:
            self._rows = self._align()
        if not -len(self._rows) <= batch_index < len(self._rows):
            raise InputError(f"batch index {batch_index} is out of range: the encoding has {len(self._rows)} rows")
        return self._rows[batch_index]

    def _indices(self, first, second) -> tuple:
        """(batch index, index) from HF's (batch_or_index, index=None) arguments."""
        return (0, first) if second is None else (first, second)

    @property
    def n_sequences(self) -> int:
        return len({s for s in self._row(0).sequence_ids if s is not None}) or 1

    def tokens(self, batch_index: int = 0) -> list:
        return list(self._row(batch_index).tokens)

    def word_ids(self, batch_index: int = 0) -> list:
        return list(self._row(batch_index).word_ids)

    def sequence_ids(self, batch_index: int = 0) -> list:
        return list(self._row(batch_index).sequence_ids)

    def token_to_sequence(self, batch_or_token_index: int, token_index: int | None = None):
        b, t = self._indices(batch_or_token_index, token_index)
        row = self._row(b)
        return row.sequence_ids[t if t >= 0 else len(row.tokens) + t]

    def token_to_word(self, batch_or_token_index: int, token_index: int | None = None):
        b, t = self._indices(batch_or_token_index, token_index)
        row = self._row(b)
        t = t if t >= 0 else len(row.tokens) + t
        return row.word_ids[t] if row.sequence_ids[t] is not None else None

    def token_to_chars(self, batch_or_token_index: int, token_index: int | None = None):
        b, t = self._indices(batch_or_token_index, token_index)
        row = self._row(b)
        t = t if t >= 0 else len(row.tokens) + t
        return CharSpan(*row.offsets[t]) if row.sequence_ids[t] is not None else None

    def char_to_token(self, batch_or_char_index: int, char_index: int | None = None, sequence_index: int = 0):
        b, c = self._indices(batch_or_char_index, char_index)
        row = self._row(b)
        return next((t for t in _in_sequence(row, sequence_index) if row.offsets[t][0] <= c < row.offsets[t][1]), None)

    def char_to_word(self, batch_or_char_index: int, char_index: int | None = None, sequence_index: int = 0):
        b, c = self._indices(batch_or_char_index, char_index)
        token = self.char_to_token(b, c, sequence_index)
        return None if token is None else self.token_to_word(b, token)

    def word_to_tokens(self, batch_or_word_index: int, word_index: int | None = None, sequence_index: int = 0):
        b, w = self._indices(batch_or_word_index, word_index)
        row = self._row(b)
        found = []
        for t in _in_sequence(row, sequence_index):      # in order, until a later word (Rust's take_while)
            if row.word_ids[t] is not None and row.word_ids[t] > w:
                break
            if row.word_ids[t] == w:
                found.append(t)
        return TokenSpan(found[0], found[-1] + 1) if found else None

    def word_to_chars(self, batch_or_word_index: int, word_index: int | None = None, sequence_index: int = 0):
        b, w = self._indices(batch_or_word_index, word_index)
        span = self.word_to_tokens(b, w, sequence_index)
        row = self._row(b)
        return None if span is None else CharSpan(row.offsets[span.start][0], row.offsets[span.end - 1][1])


def _in_sequence(row: Alignment, sequence_index: int) -> list:
    """The positions of a row's tokens that belong to one sequence (side) of it."""
    return [t for t, s in enumerate(row.sequence_ids) if s == sequence_index]
