"""BertTokenizer: BERT's four steps (the package's docstring) behind Hugging Face's method names,
with offsets, word ids, truncation of pairs and padding, and the files it is saved as."""
from __future__ import annotations

import json
import os
import warnings
from itertools import accumulate
from typing import NamedTuple

import numpy as np
import regex

from npbert.errors import JSON_ERRORS, DataError, InputError
from npbert.tokenizer.normalize import BasicTokenizer
from npbert.tokenizer.vocab import CLS, MASK, PAD, SEP, SPECIAL_TOKENS, UNK, VOCAB_FILE, check_vocab, load_vocab
from npbert.tokenizer.wordpiece import CONTINUATION, MAX_WORD_CHARS, piece_length, wordpiece

CONFIG_FILE = "tokenizer_config.json"
HF_TOKENIZER_FILE = "tokenizer.json"
_WORD = regex.compile(r"[^ ]+")  # after normalization " " is the only whitespace left


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
        self._pieces_of_word: dict[str, tuple[tuple[str, ...], tuple[tuple[int, int], ...]]] = {}
        self._warned_implicit_truncation = False

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
        cached = self._pieces_of_word.get(word)
        if cached is None:
            pieces = wordpiece(word, self.vocab, self.max_input_chars_per_word, self._max_piece_chars)
            if pieces is None:
                cached = (UNK,), ((0, len(word)),)
            else:
                ends = list(accumulate(map(piece_length, pieces)))
                cached = tuple(pieces), tuple(zip([0] + ends[:-1], ends))
            if len(self._pieces_of_word) >= 1 << 20:  # bound memory on huge corpora
                self._pieces_of_word.clear()
            self._pieces_of_word[word] = cached
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

    def encode(self, text, text_pair=None, add_special_tokens=True, max_length=None, truncation=None) -> list[int]:
        _check_text(text)                              # one text (or pair), never a batch
        return self(text, text_pair, add_special_tokens, max_length, truncation)["input_ids"]

    def _implicit_truncation(self, truncation, max_length, padding):
        """HF's rule (tokenization_utils_base, _get_padding_truncation_strategies): a max_length
        given with truncation left unset (None) and padding=False truncates longest_first, and
        warns once per tokenizer. An explicit truncation=False keeps every token."""
        if max_length is None or padding is not False or truncation is not None:
            return truncation
        if not self._warned_implicit_truncation:
            warnings.warn("truncation was not set but max_length was: truncating 'longest_first' as Hugging Face "
                          "does; pass truncation=True to truncate, truncation=False to keep every token",
                          UserWarning, stacklevel=3)
            self._warned_implicit_truncation = True
        return "longest_first"

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

    def __call__(self, text, text_pair=None, add_special_tokens=True, max_length=None, truncation=None,
                 padding=False, return_offsets_mapping=False, return_word_ids=False, return_tensors=None) -> dict:
        """Encode a text, a pair (text, text_pair), or a batch (a list of texts or of (a, b)
        pairs, or two lists) into input_ids, token_type_ids, attention_mask (+ offset_mapping:
        (start, end) into the original text, (0, 0) for special tokens and padding; + word_ids:
        the word each token is from, -1 for special tokens and padding).

        truncation: False or True/"longest_first" (pairs lose tokens from the longer side); left
        unset (None) with a max_length and padding=False, it is "longest_first" (HF's rule, warned once);
        padding: False, True/"longest" or "max_length"; return_tensors: None or "np".
        Without max_length, truncation and padding="max_length" use model_max_length."""
        batch, items = _as_items(text, text_pair)
        if max_length is not None and (not isinstance(max_length, int) or isinstance(max_length, bool)
                                       or max_length < 1):
            raise InputError(f"max_length must be a positive integer, got {max_length!r}")
        truncation = _check_choice("truncation", self._implicit_truncation(truncation, max_length, padding),
                                   {None: False, False: False, "do_not_truncate": False,
                                    True: True, "longest_first": True})
        padding = _check_choice("padding", padding, {False: None, None: None, "do_not_pad": None,
                                                     True: "longest", "longest": "longest",
                                                     "max_length": "max_length"})
        if return_tensors not in (None, "np"):
            raise InputError(f"return_tensors must be None or 'np', got {return_tensors!r}")
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
