"""BERT's WordPiece tokenizer: normalize -> split into words -> greedy longest-match WordPiece.

The rules are those of the original BERT (google-research/bert tokenization.py), in the order
Hugging Face's BertTokenizerFast applies them, so ids and character offsets match it:

  1. special tokens ("[MASK]", ...) written literally in the text are kept whole;
  2. each character is normalized on its own: NUL, U+FFFD and control characters are dropped,
     whitespace becomes " ", CJK ideographs get spaces around them, accents are stripped
     (NFD, drop Mn) and letters lower-cased, punctuation gets spaces around it;
  3. the normalized text is split on spaces into words;
  4. each word becomes WordPiece tokens: greedy longest match first, "##" marks a piece that
     continues a word, and a word that is too long or has an unmatchable piece is one [UNK].

Because step 2 works character by character, every normalized character knows which
original character it came from, which is what the offsets are made of. docs/tokenizer.md
walks through an example and lists where npbert and Hugging Face's tokenizers differ.
"""
from __future__ import annotations

import json
import os
import unicodedata
from itertools import accumulate
from typing import NamedTuple

import numpy as np
import regex

from npbert.errors import JSON_ERRORS, DataError, InputError

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
CONTINUATION = "##"
MAX_WORD_CHARS = 200  # the original BERT's max_input_chars_per_word (Hugging Face uses 100)

VOCAB_FILE = "vocab.txt"
CONFIG_FILE = "tokenizer_config.json"
HF_TOKENIZER_FILE = "tokenizer.json"

_CONTROL_CATEGORIES = ("Cc", "Cf", "Co", "Cs")  # not Cn: unassigned code points are kept, as HF fast does
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF),  # 0x2B920 (not 0x2B820) as HF's Rust code has it
               (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_WORD = regex.compile(r"[^ ]+")  # after normalization " " is the only whitespace left


# ---------------------------------------------------------------- character classes

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
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


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


# ---------------------------------------------------------------- basic tokenizer (words)

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


# ---------------------------------------------------------------- WordPiece

def wordpiece(word: str, vocab, max_word_chars: int, max_piece_chars: int) -> list[str] | None:
    """Greedy longest-match-first split of one word into vocab pieces; None if impossible.
    max_piece_chars (the longest vocab entry) only bounds the search, it never changes the result."""
    if len(word) > max_word_chars:
        return None
    pieces, start = [], 0
    while start < len(word):
        for end in range(min(len(word), start + max_piece_chars), start, -1):
            piece = word[start:end] if start == 0 else CONTINUATION + word[start:end]
            if piece in vocab:
                break
        else:
            return None
        pieces.append(piece)
        start = end
    return pieces


def piece_length(piece: str) -> int:
    """How many characters of the word a (non-[UNK]) piece covers."""
    return len(piece) - len(CONTINUATION) if piece.startswith(CONTINUATION) else len(piece)


# ---------------------------------------------------------------- vocabulary files

def load_vocab(path) -> list[str]:
    """One token per line, id = line number (0-based), as BERT's vocab.txt. Lines end at \n,
    \r\n or \r (Python's universal newlines, as Hugging Face reads it)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise DataError(f"vocabulary file not found: {path}") from None
    except OSError as e:
        raise DataError(f"cannot read vocabulary {path}: {e.strerror}") from None
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


# ---------------------------------------------------------------- encodings

class Tokenized(NamedTuple):
    """One text, token by token: offsets are (start, end) into the original text; word_ids say
    which word (0, 1, ... in order; punctuation marks are words of their own) a token is from."""
    tokens: list[str]
    offsets: list[tuple[int, int]]
    word_ids: list[int]


def longest_first(len_a: int, len_b: int, budget: int) -> tuple[int, int]:
    """How many tokens of each sequence to keep, as HF's `longest_first` (Rust) truncation:
    the shorter keeps min(its length, budget // 2), the longer gets the rest."""
    if len_a + len_b <= budget:
        return len_a, len_b
    keep_short = min(len_a, len_b, budget // 2)
    return (keep_short, budget - keep_short) if len_a <= len_b else (budget - keep_short, keep_short)


def _is_pair(item) -> bool:
    return isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(s, str) for s in item)


class BertTokenizer:
    """BERT's WordPiece tokenizer with Hugging Face's method names.

    BertTokenizer(vocab_file_or_list, do_lower_case=True, strip_accents=None,
                  tokenize_chinese_chars=True, max_input_chars_per_word=200, model_max_length=512)

    The vocabulary must contain [PAD] [UNK] [CLS] [SEP] [MASK] (at any ids)."""

    def __init__(self, vocab_file_or_list, do_lower_case=True, strip_accents=None,
                 tokenize_chinese_chars=True, max_input_chars_per_word=MAX_WORD_CHARS,
                 model_max_length=512):
        tokens = load_vocab(vocab_file_or_list) if isinstance(vocab_file_or_list, (str, os.PathLike)) \
            else vocab_file_or_list
        self.vocab = check_vocab(tokens)
        self.ids_to_tokens = list(self.vocab)
        for name, value in (("max_input_chars_per_word", max_input_chars_per_word),
                            ("model_max_length", model_max_length)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InputError(f"{name} must be a positive integer, got {value!r}")
        self.max_input_chars_per_word = max_input_chars_per_word
        self.model_max_length = model_max_length
        self.basic = BasicTokenizer(do_lower_case, strip_accents, tokenize_chinese_chars)
        self.pad_token_id, self.unk_token_id, self.cls_token_id, self.sep_token_id, self.mask_token_id = \
            (self.vocab[t] for t in SPECIAL_TOKENS)
        self.all_special_ids = [self.vocab[t] for t in SPECIAL_TOKENS]
        # Special tokens written in the text stay whole (HF does this too).
        self._special_split = regex.compile("(" + "|".join(map(regex.escape, SPECIAL_TOKENS)) + ")")
        self._max_piece_chars = max(map(piece_length, self.vocab))
        self._word_cache: dict[str, tuple[tuple[str, ...], tuple[tuple[int, int], ...]]] = {}

    pad_token, unk_token, cls_token, sep_token, mask_token = SPECIAL_TOKENS
    do_lower_case = property(lambda self: self.basic.do_lower_case)
    strip_accents = property(lambda self: self.basic.strip_accents)
    tokenize_chinese_chars = property(lambda self: self.basic.tokenize_chinese_chars)
    vocab_size = property(lambda self: len(self.vocab))

    def __len__(self):
        return len(self.vocab)

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    # ------------------------------------------------------------ loading and saving

    @classmethod
    def from_pretrained(cls, directory, **overrides):
        """Read vocab.txt, and the options from tokenizer_config.json (and tokenizer.json's
        WordPiece max_input_chars_per_word) when present, as written by Hugging Face or by us."""
        if not os.path.isdir(directory):
            raise DataError(f"tokenizer directory not found: {directory}")
        options = {}
        config = _read_json(os.path.join(directory, CONFIG_FILE))
        for key in ("do_lower_case", "strip_accents", "tokenize_chinese_chars",
                    "max_input_chars_per_word", "model_max_length"):
            if key in config:
                options[key] = config[key]
        model = _read_json(os.path.join(directory, HF_TOKENIZER_FILE)).get("model")
        if isinstance(model, dict) and "max_input_chars_per_word" in model:
            options["max_input_chars_per_word"] = model["max_input_chars_per_word"]
        max_length = options.pop("model_max_length", None)
        if isinstance(max_length, int) and max_length <= 10**9:  # HF writes a huge number for "no limit"
            options["model_max_length"] = max_length
        options.update(overrides)
        return cls(os.path.join(directory, VOCAB_FILE), **options)

    def save_vocabulary(self, directory) -> str:
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, VOCAB_FILE)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(token + "\n" for token in self.ids_to_tokens))
        return path

    def save_pretrained(self, directory) -> list[str]:
        """vocab.txt + a tokenizer_config.json that transformers' BertTokenizer loads."""
        vocab_path = self.save_vocabulary(directory)
        config = {"tokenizer_class": "BertTokenizer", "do_lower_case": self.do_lower_case,
                  "strip_accents": self.strip_accents, "tokenize_chinese_chars": self.tokenize_chinese_chars,
                  "max_input_chars_per_word": self.max_input_chars_per_word,
                  "model_max_length": self.model_max_length,
                  "unk_token": UNK, "sep_token": SEP, "pad_token": PAD, "cls_token": CLS, "mask_token": MASK}
        config_path = os.path.join(directory, CONFIG_FILE)
        with open(config_path, "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2)
            f.write("\n")
        return [vocab_path, config_path]

    # ------------------------------------------------------------ text -> tokens

    def _pieces(self, word: str) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
        """WordPiece tokens of a word and the (start, end) characters of the word each covers."""
        cached = self._word_cache.get(word)
        if cached is None:
            pieces = wordpiece(word, self.vocab, self.max_input_chars_per_word, self._max_piece_chars)
            if pieces is None:
                cached = (UNK,), ((0, len(word)),)
            else:
                ends = list(accumulate(map(piece_length, pieces)))
                cached = tuple(pieces), tuple(zip([0] + ends[:-1], ends))
            if len(self._word_cache) >= 1 << 20:  # bound memory on huge corpora
                self._word_cache.clear()
            self._word_cache[word] = cached
        return cached

    def _segments(self, text: str) -> list[str]:
        """Text split around literal special tokens; odd positions are the special tokens."""
        _check_text(text)
        return self._special_split.split(text) if "[" in text else [text]

    def tokenize(self, text: str) -> list[str]:
        tokens = []
        for i, segment in enumerate(self._segments(text)):
            if i % 2:
                tokens.append(segment)
            else:
                for word in self.basic.split(segment):
                    tokens.extend(self._pieces(word)[0])
        return tokens

    def tokenize_with_offsets(self, text: str) -> Tokenized:
        """Tokens with their (start, end) character offsets in `text` and their word index.
        An [UNK] spans its whole word; pieces made from one character all span that character."""
        tokens, offsets, word_ids = [], [], []
        base = 0
        for i, segment in enumerate(self._segments(text)):
            if i % 2:
                tokens.append(segment)
                offsets.append((base, base + len(segment)))
                word_ids.append(word_ids[-1] + 1 if word_ids else 0)
            else:
                normalized, origin = self.basic.normalize_with_origin(segment)
                for word in _WORD.finditer(normalized):
                    word_id = word_ids[-1] + 1 if word_ids else 0
                    pieces, spans = self._pieces(word.group())
                    at = word.start()
                    tokens += pieces
                    offsets += [(base + origin[at + start], base + origin[at + end - 1] + 1) for start, end in spans]
                    word_ids += [word_id] * len(pieces)
            base += len(segment)
        return Tokenized(tokens, offsets, word_ids)

    # ------------------------------------------------------------ tokens <-> ids

    def convert_tokens_to_ids(self, tokens):
        """Unknown tokens map to [UNK]'s id."""
        if isinstance(tokens, str):
            return self.vocab.get(tokens, self.unk_token_id)
        return [self.vocab.get(t, self.unk_token_id) for t in tokens]

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, (int, np.integer)):
            return self.ids_to_tokens[self._check_id(ids)]
        return [self.ids_to_tokens[self._check_id(i)] for i in ids]

    def _check_id(self, token_id) -> int:
        if isinstance(token_id, (bool, np.bool_)) or not isinstance(token_id, (int, np.integer)) \
                or not 0 <= token_id < len(self.ids_to_tokens):
            raise InputError(f"token id {token_id!r} is not in the vocabulary (0..{len(self.ids_to_tokens) - 1})")
        return int(token_id)

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=True) -> str:
        """Tokens joined by spaces, "##" pieces glued to the previous token, then HF's
        clean_up_tokenization (no space before . , ! ? and in contractions like "don't")."""
        tokens = self.convert_ids_to_tokens(list(np.asarray(ids).ravel()) if isinstance(ids, np.ndarray) else ids)
        if skip_special_tokens:
            tokens = [t for t in tokens if t not in SPECIAL_TOKENS]
        text = " ".join(tokens).replace(" " + CONTINUATION, "").strip()
        return clean_up_tokenization(text) if clean_up_tokenization_spaces else text

    # ------------------------------------------------------------ encoding for the model

    def encode(self, text, text_pair=None, add_special_tokens=True, max_length=None, truncation=False) -> list[int]:
        return self._encode_one(text, text_pair, add_special_tokens, max_length, truncation, False)["input_ids"]

    def _encode_one(self, text, text_pair, add_special_tokens, max_length, truncation, with_offsets) -> dict:
        """One text (or pair) -> input_ids, token_type_ids, attention_mask, offset_mapping, word_ids."""
        sequences = [self.tokenize_with_offsets(t) if with_offsets else Tokenized(self.tokenize(t), None, None)
                     for t in ((text,) if text_pair is None else (text, text_pair))]
        n_special = (len(sequences) + 1) if add_special_tokens else 0
        if truncation:
            limit = self.model_max_length if max_length is None else max_length
            if limit < n_special:
                raise InputError(f"max_length={limit} leaves no room for the {n_special} special tokens")
            budget = limit - n_special
            if len(sequences) == 1:
                keep = (min(len(sequences[0].tokens), budget),)
            else:
                keep = longest_first(len(sequences[0].tokens), len(sequences[1].tokens), budget)
            sequences = [Tokenized(*(None if v is None else v[:k] for v in s)) for s, k in zip(sequences, keep)]
        ids, types, offsets, word_ids = [], [], [], []
        if add_special_tokens:
            ids, types, offsets, word_ids = [self.cls_token_id], [0], [(0, 0)], [-1]
        for type_id, seq in enumerate(sequences):
            ids += self.convert_tokens_to_ids(seq.tokens)
            types += [type_id] * len(seq.tokens)
            if with_offsets:
                offsets += seq.offsets
                word_ids += seq.word_ids
            if add_special_tokens:
                ids.append(self.sep_token_id)
                types.append(type_id)
                offsets.append((0, 0))
                word_ids.append(-1)
        out = {"input_ids": ids, "token_type_ids": types, "attention_mask": [1] * len(ids)}
        if with_offsets:
            out["offset_mapping"] = offsets
            out["word_ids"] = word_ids
        return out

    def __call__(self, text, text_pair=None, add_special_tokens=True, max_length=None, truncation=False,
                 padding=False, return_offsets_mapping=False, return_word_ids=False, return_tensors=None) -> dict:
        """Encode a text, a pair (text, text_pair), or a batch (a list of texts or of (a, b)
        pairs, or two lists) into input_ids, token_type_ids, attention_mask (+ offset_mapping:
        (start, end) into the original text, (0, 0) for special tokens and padding; + word_ids:
        the word each token is from, -1 for special tokens and padding).

        truncation: False or True/"longest_first" (pairs lose tokens from the longer side);
        padding: False, True/"longest" or "max_length"; return_tensors: None or "np".
        Without max_length, truncation and padding="max_length" use model_max_length."""
        batch, items = _as_items(text, text_pair)
        truncation = _check_choice("truncation", truncation, {False: False, "do_not_truncate": False,
                                                              True: True, "longest_first": True})
        padding = _check_choice("padding", padding, {False: None, None: None, "do_not_pad": None,
                                                     True: "longest", "longest": "longest",
                                                     "max_length": "max_length"})
        if return_tensors not in (None, "np"):
            raise InputError(f"return_tensors must be None or 'np', got {return_tensors!r}")
        if max_length is not None and (not isinstance(max_length, int) or isinstance(max_length, bool)
                                       or max_length < 1):
            raise InputError(f"max_length must be a positive integer, got {max_length!r}")
        with_offsets = return_offsets_mapping or return_word_ids
        rows = [self._encode_one(a, b, add_special_tokens, max_length, truncation, with_offsets) for a, b in items]
        if padding:
            width = max((len(r["input_ids"]) for r in rows), default=0) if padding == "longest" else \
                (self.model_max_length if max_length is None else max_length)
            rows = [self._pad(r, width) for r in rows]
        keys = ["input_ids", "token_type_ids", "attention_mask"] + \
            ["offset_mapping"] * bool(return_offsets_mapping) + ["word_ids"] * bool(return_word_ids)
        out = {k: [r[k] for r in rows] if batch else rows[0][k] for k in keys}
        if return_tensors == "np":
            if len({len(r["input_ids"]) for r in rows}) > 1:
                raise InputError("return_tensors='np' needs sequences of one length: pass padding=True")
            out = {k: np.array(v if batch else [v], dtype=np.int64) for k, v in out.items()}
        return out

    def _pad(self, row: dict, width: int) -> dict:
        n = width - len(row["input_ids"])
        if n <= 0:
            return row
        fill = {"input_ids": self.pad_token_id, "token_type_ids": 0, "attention_mask": 0,
                "offset_mapping": (0, 0), "word_ids": -1}
        return {k: v + [fill[k]] * n for k, v in row.items()}


def clean_up_tokenization(text: str) -> str:
    """Hugging Face's clean_up_tokenization: undo the spaces that tokenization put before
    punctuation and inside English contractions."""
    for spaced, joined in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                           (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        text = text.replace(spaced, joined)
    return text


def _read_json(path) -> dict:
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except JSON_ERRORS as e:
        raise DataError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise DataError(f"{path} must hold a JSON object")
    return data


def _check_text(text):
    if not isinstance(text, str):
        raise InputError(f"text must be a str, got {type(text).__name__}")


def _check_choice(name, value, choices: dict):
    try:
        return choices[value]
    except (KeyError, TypeError):
        raise InputError(f"{name} must be one of {list(choices)}, got {value!r}") from None


def _as_items(text, text_pair) -> tuple[bool, list[tuple[str, str | None]]]:
    """(is_batch, [(text, pair or None)]) from the ways __call__ accepts its input."""
    if isinstance(text, str):
        if text_pair is not None and not isinstance(text_pair, str):
            raise InputError(f"text_pair must be a str when text is, got {type(text_pair).__name__}")
        return False, [(text, text_pair)]
    if not isinstance(text, (list, tuple)):
        raise InputError(f"text must be a str, a list of str or a list of (str, str) pairs, "
                         f"got {type(text).__name__}")
    if text_pair is not None:
        if not isinstance(text_pair, (list, tuple)) or len(text_pair) != len(text):
            raise InputError("with a batch of texts, text_pair must be a list of the same length")
        items = list(zip(text, text_pair))
    else:
        items = [tuple(t) if _is_pair(t) else (t, None) for t in text]
    for a, b in items:
        _check_text(a)
        if b is not None:
            _check_text(b)
    return True, items
