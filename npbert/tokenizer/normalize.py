"""Steps 2 and 3 of BERT's tokenizer: normalize each character on its own, then split into words
(the package's docstring has all four steps).

Each character becomes "" (NUL, U+FFFD and control characters are dropped), " " (whitespace),
or its normalized form: accents stripped (NFD, drop Mn) and letters lower-cased when asked,
spaces around punctuation (ASCII 33-47, 58-64, 91-96, 123-126 and Unicode P*) and around CJK
ideographs. Because it works character by character, every normalized character knows which
original character it came from (normalize_with_origin): that is what offsets are made of.
"""
from __future__ import annotations

import unicodedata

import numpy as np

_CONTROL_CATEGORIES = ("Cc", "Cf", "Co", "Cs")  # not Cn: unassigned code points are kept, as HF fast does
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF),  # 0x2B920 (not 0x2B820) as HF's Rust code has it
               (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_whitespace(char: str) -> bool:
    return char in " \t\n\r" or unicodedata.category(char) in ("Zs", "Zl", "Zp")


def is_control(char: str) -> bool:
    return char not in "\t\n\r" and unicodedata.category(char) in _CONTROL_CATEGORIES


def is_punctuation(char: str) -> bool:
    # All non-alphanumeric printable ASCII counts ("$", "^", "`" are symbols, not P*, in Unicode).
    cp = ord(char)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or \
        unicodedata.category(char).startswith("P")


def is_cjk(char: str) -> bool:
    cp = ord(char)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def normalize_char(char: str, lower: bool, strip_accents: bool, split_cjk: bool) -> str:
    """What one input character becomes: "" (dropped), " " (whitespace), or its normalized form,
    with a space either side of each punctuation mark and (if split_cjk) each CJK ideograph."""
    if char == "\x00" or char == "\ufffd" or is_control(char):
        return ""
    if is_whitespace(char):
        return " "
    out = char
    if strip_accents:
        out = "".join(c for c in unicodedata.normalize("NFD", out) if unicodedata.category(c) != "Mn")
    if lower:
        out = out.lower()  # one character at a time: "Σ" -> "σ" always, as HF fast does (no final ς)
    out = "".join(f" {c} " if is_punctuation(c) else c for c in out)
    return f" {out} " if split_cjk and is_cjk(char) else out


class _CharMap(dict):
    """normalize_char, memoized: a text is normalized with one dict lookup per character."""

    def __init__(self, lower, strip_accents, split_cjk):
        super().__init__()
        self.options = (lower, strip_accents, split_cjk)

    def __missing__(self, char):
        self[char] = normalize_char(char, *self.options)
        return self[char]


class BasicTokenizer:
    """Text -> words (whitespace- and punctuation-separated), before WordPiece.

    strip_accents=None follows do_lower_case, as in BERT and Hugging Face."""

    def __init__(self, do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True):
        self.do_lower_case = bool(do_lower_case)
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = bool(tokenize_chinese_chars)
        strip = self.do_lower_case if strip_accents is None else bool(strip_accents)
        self._chars = _CharMap(self.do_lower_case, strip, self.tokenize_chinese_chars)

    def normalize(self, text: str) -> str:
        return "".join(map(self._chars.__getitem__, text))

    def split(self, text: str) -> list[str]:
        return self.normalize(text).split()

    def normalize_with_origin(self, text: str) -> tuple[str, list[int]]:
        """The normalized text, and for each of its characters the index in `text` of the
        character it came from (NFD can make several characters from one)."""
        pieces = list(map(self._chars.__getitem__, text))
        lengths = np.frombuffer(bytes(map(len, pieces)), np.uint8)  # a character normalizes to < 256
        return "".join(pieces), np.repeat(np.arange(len(text)), lengths).tolist()
