"""Vocabulary files: vocab.txt, one token per line, id = line number, with BERT's special tokens."""
from __future__ import annotations

import codecs

from npbert.errors import DataError
from npbert.reading import VOCAB_LIMIT, read_bytes

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
VOCAB_FILE = "vocab.txt"


def load_vocab(path) -> list[str]:
    """One token per line, id = line number (0-based), as BERT's vocab.txt. Lines end at \n,
    \r\n or \r (Python's universal newlines, as Hugging Face reads it)."""
    raw = read_bytes(path, "vocabulary file", VOCAB_LIMIT)   # bounded: a vocab.txt -> /dev/zero is refused at once
    if raw.startswith(codecs.BOM_UTF8):               # Hugging Face would read '\ufeff[PAD]' as the first token
        raise DataError(f"vocabulary {path} starts with a UTF-8 byte-order mark (bytes EF BB BF), which would be "
                        "part of its first token: save it as UTF-8 without one")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line, bad = raw[:e.start].count(b"\n") + 1, raw[e.start:e.start + 1]
        raise DataError(f"vocabulary {path} is not UTF-8 (line {line}, byte {e.start}: {bad!r})") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n").removesuffix("\n")
    if not text:
        raise DataError(f"vocabulary {path} is empty")
    return text.split("\n")


def check_vocab(tokens) -> dict[str, int]:
    """token -> id, after checking the list is usable: non-empty strings, no duplicates, no
    newlines, and every special token present."""
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__iter__"):
        raise DataError(f"vocabulary must be a list of tokens or a vocab.txt path, got {type(tokens).__name__}")
    vocab = {}
    for i, token in enumerate(tokens):
        if not isinstance(token, str) or not token or "\n" in token:
            raise DataError(f"vocabulary entry {i} ({token!r}) must be a non-empty string without newlines")
        if token in vocab:
            raise DataError(f"vocabulary has duplicate token {token!r} (ids {vocab[token]} and {i})")
        vocab[token] = i
    if not vocab:
        raise DataError("vocabulary is empty")
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise DataError(f"vocabulary is missing special token(s) {', '.join(missing)}")
    return vocab
