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
from functools import partial

import numpy as np
import regex

from npbert.errors import InputError

_CONTROL_CATEGORIES = ("Cc", "Cf", "Co", "Cs")  # not Cn: unassigned code points are kept, as HF fast does
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF),  # 0x2B920 (not 0x2B820) as HF's Rust code has it
               (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
WORD = regex.compile(r"[^ ]+")  # after normalization " " is the only whitespace left


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


def normalize_char(char: str, lower: bool, strip_accents: bool, split_cjk: bool, split_punctuation: bool = True) -> str:
    """What one input character becomes: "" (dropped), " " (whitespace), or its normalized form,
    with a space either side of each punctuation mark (unless not split_punctuation) and (if
    split_cjk) each CJK ideograph."""
    if char == "\x00" or char == "\ufffd" or is_control(char):
        return ""
    if is_whitespace(char):
        return " "
    out = char
    if strip_accents:
        out = "".join(c for c in unicodedata.normalize("NFD", out) if unicodedata.category(c) != "Mn")
    if lower:
        out = out.lower()  # one character at a time: "Σ" -> "σ" always, as HF fast does (no final ς)
    if split_punctuation:
        out = "".join(f" {c} " if is_punctuation(c) else c for c in out)
    return f" {out} " if split_cjk and is_cjk(char) else out


class CharMap(dict):
    """A function of one character, memoized: a text is mapped with one dict lookup per character."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def __missing__(self, char):
        self[char] = self.function(char)
        return self[char]

    def apply(self, text: str) -> str:
        return "".join(map(self.__getitem__, text))

    def with_origin(self, text: str) -> tuple[str, list[int]]:
        """The mapped text, and for each of its characters the index in `text` of the character it
        came from (NFD can make several characters from one)."""
        pieces = list(map(self.__getitem__, text))
        lengths = np.frombuffer(bytes(map(len, pieces)), np.uint8)  # a character normalizes to < 256
        return "".join(pieces), np.repeat(np.arange(len(text)), lengths).tolist()


class BasicTokenizer:
    """Text -> words (whitespace- and punctuation-separated), before WordPiece.

    strip_accents=None follows do_lower_case, as in BERT and Hugging Face. never_split: words kept
    whole, as by transformers' Python BasicTokenizer: a word between whitespace, control characters
    left out, that is one of them as written (then kept so) or once lower-cased (then kept lower-cased),
    never cut at punctuation (no NFC first, as npbert never does)."""

    def __init__(self, do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True, never_split=None):
        self.do_lower_case = bool(do_lower_case)
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = bool(tokenize_chinese_chars)
        self.never_split = word_set("never_split", never_split)
        steps = dict(lower=self.do_lower_case, strip_accents=self.do_lower_case if strip_accents is None
                     else bool(strip_accents), split_cjk=self.tokenize_chinese_chars)
        self.chars = CharMap(partial(normalize_char, **steps))
        # The same steps apart, as Hugging Face's Rust tokenizer takes them to match added tokens: its
        # normalizer (all but the punctuation split), then its pre-tokenizer's punctuation split.
        self.normalizer = CharMap(partial(normalize_char, **steps, split_punctuation=False))
        self.punctuation = CharMap(partial(normalize_char, lower=False, strip_accents=False, split_cjk=False))
        # what never_split's words are read from: control characters dropped, whitespace and CJK spaced
        self._cleaned = CharMap(partial(normalize_char, lower=False, strip_accents=False,
                                        split_cjk=self.tokenize_chinese_chars, split_punctuation=False))

    def normalize(self, text: str) -> str:
        return self.chars.apply(text)

    def normalize_with_origin(self, text: str) -> tuple[str, list[int]]:
        """The normalized text, and for each of its characters the index in `text` of the
        character it came from (NFD can make several characters from one)."""
        return self.chars.with_origin(text)

    def split(self, text: str, never_split=None) -> list[str]:
        """The words of text; a word in never_split (this call's or the tokenizer's) as it is."""
        never_split = self.never_split if never_split is None else self.never_split | word_set("never_split", never_split)
        if not never_split:                            # the usual case, and the vocabulary trainer's: no search
            return self.normalize(text).split()
        words, at = [], 0
        for start, end, word in self.never_split_words(text, never_split):
            words += self.normalize(text[at:start]).split() + [word]
            at = end
        return words + self.normalize(text[at:]).split()

    tokenize = split                                   # Hugging Face's name

    def never_split_words(self, text: str, never_split=None) -> list[tuple[int, int, str]]:
        """(start, end, word) of each word of text kept whole by never_split (default: the tokenizer's),
        as transformers' Python BasicTokenizer keeps them: a word between whitespace (control characters
        left out) that is in never_split as it is, or once lower-cased and stripped of accents (as asked)."""
        never_split = self.never_split if never_split is None else never_split
        if not never_split:
            return []
        cleaned, origin = self._cleaned.with_origin(text)
        found = []
        for m in WORD.finditer(cleaned):
            word = m.group() if m.group() in never_split else self.normalizer.apply(m.group()).strip()
            if word in never_split:
                found.append((origin[m.start()], origin[m.end() - 1] + 1, word))
        return found


def word_set(name: str, words) -> frozenset:
    """A collection of strings (None: none) as a frozenset, or an InputError naming `name`."""
    if words is None:
        return frozenset()
    if isinstance(words, (str, bytes)) or not hasattr(words, "__iter__"):
        raise InputError(f"{name} must be a list of strings, got {type(words).__name__}")
    words = list(words)
    bad = next((w for w in words if not isinstance(w, str)), None)
    if bad is not None:
        raise InputError(f"{name} must be a list of strings, got a {type(bad).__name__} in it")
    return frozenset(words)
