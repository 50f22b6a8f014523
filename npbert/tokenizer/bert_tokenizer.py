"""BertTokenizer: BERT's four steps (the package's docstring) behind Hugging Face's method names and
options, each behaving as transformers' BertTokenizerFast does (docs/tokenizer.md lists them):
pairs, truncation (strategies, sides, overflowing windows with a stride), padding (sides,
multiples), pre-split words, offsets, word and sequence ids, added tokens, decoding, and the files it
is saved as; and transformers 4's older names and its Python tokenizer's options (never_split,
do_basic_tokenize, spaces_between_special_tokens)."""
from __future__ import annotations

import os
import warnings
from itertools import accumulate, groupby
from typing import NamedTuple

import numpy as np
import regex

from npbert.errors import DataError, InputError
from npbert.tokenizer.decoding import clean_up_tokenization, wordpiece_decode
from npbert.tokenizer.encoding import Alignment, Encoding
from npbert.tokenizer.files import SPECIAL_NAMES, read_tokenizer_files, write_tokenizer_files
from npbert.tokenizer.normalize import WORD, BasicTokenizer, CharMap
from npbert.tokenizer.padding import SIDES, check_padding_options, pad_row, target_width
from npbert.tokenizer.truncation import STRATEGIES, longest_first, truncation_windows
from npbert.tokenizer.vocab import CLS, SEP, SPECIAL_TOKENS, UNK, check_vocab, load_vocab
from npbert.tokenizer.wordpiece import MAX_WORD_CHARS, piece_length, wordpiece

__all__ = ["BertTokenizer", "Tokenized", "clean_up_tokenization", "longest_first"]
# the values __call__ accepts -> what they mean
_TRUNCATION = {None: None, False: None, "do_not_truncate": None, True: "longest_first", **{s: s for s in STRATEGIES}}
_PADDING = {False: None, None: None, "do_not_pad": None, True: "longest", "longest": "longest",
            "max_length": "max_length"}


class Tokenized(NamedTuple):
    """One text, token by token: offsets are (start, end) into the original text; word_ids say
    which word (0, 1, ... in order; punctuation marks are words of their own) a token is from."""
    tokens: list[str]
    offsets: list[tuple[int, int]] | None
    word_ids: list[int] | None


class _Options(NamedTuple):
    """How __call__ encodes each item, checked."""
    add_special_tokens: bool
    truncation: str | None                     # a strategy, or None
    max_length: int | None
    stride: int
    is_split_into_words: bool
    with_offsets: bool                         # offsets, words and sequences (the alignment)
    overflowing: bool                          # every window a row, not the kept one only
    padding: str | None                        # "longest", "max_length" or None
    pad_to_multiple_of: int | None
    padding_side: str


class _Added(NamedTuple):
    """What the tokens added with add_tokens (and BERT's own special ones) make of the tokenizer, kept
    as one value (a BertTokenizer with a few dozen attributes more loses CPython's fast attribute
    lookups, and every token of a text pays for it)."""
    id_tokens: list                  # every token by id: the vocabulary's, then the added ones
    token_ids: dict                  # every token's id
    special_set: set                 # the tokens found as written, and left out by skip_special_tokens
    joined: set                      # what decode(spaces_between_special_tokens=False) joins without spaces
    special_split: object            # a regex splitting a text around the special tokens written in it
    special_hint: str                # a character every special token has ("" when not): no split without it
    by_pattern: dict                 # each normalized form of a token added as not special -> the token
    normalized_split: object         # a regex finding them (leftmost, then longest), or None


class BertTokenizer:
    """BERT's WordPiece tokenizer with Hugging Face's method names.

    BertTokenizer(vocab_file_or_list, do_lower_case=True, strip_accents=None,
                  tokenize_chinese_chars=True, max_input_chars_per_word=200, model_max_length=512,
                  clean_up_tokenization_spaces=False, padding_side="right", truncation_side="right",
                  never_split=None, do_basic_tokenize=True)

    The vocabulary must contain [PAD] [UNK] [CLS] [SEP] [MASK] (at any ids). never_split and
    do_basic_tokenize are transformers' Python BertTokenizer's: words kept whole (BasicTokenizer),
    and False to skip steps 2-3 but for a split on whitespace."""

    def __init__(self, vocab_file_or_list, do_lower_case=True, strip_accents=None,
                 tokenize_chinese_chars=True, max_input_chars_per_word=MAX_WORD_CHARS,
                 model_max_length=512, clean_up_tokenization_spaces=False, padding_side="right",
                 truncation_side="right", never_split=None, do_basic_tokenize=True):
        tokens = load_vocab(vocab_file_or_list) if isinstance(vocab_file_or_list, (str, os.PathLike)) \
            else vocab_file_or_list
        self.vocab = check_vocab(tokens)
        self.ids_to_tokens = list(self.vocab)
        for name, value in (("max_input_chars_per_word", max_input_chars_per_word),
                            ("model_max_length", model_max_length)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InputError(f"{name} must be a positive integer, got {value!r}")
        for name, value in (("padding_side", padding_side), ("truncation_side", truncation_side)):
            if value not in SIDES:
                raise InputError(f"{name} must be 'right' or 'left', got {value!r}")
        self.max_input_chars_per_word = max_input_chars_per_word
        self.model_max_length = model_max_length
        self.clean_up_tokenization_spaces = bool(clean_up_tokenization_spaces)
        self.padding_side, self.truncation_side = padding_side, truncation_side
        self.basic = BasicTokenizer(do_lower_case, strip_accents, tokenize_chinese_chars, never_split)
        self.do_basic_tokenize = bool(do_basic_tokenize)
        # never_split words are not cut into WordPiece tokens either (transformers' BertTokenizer._tokenize)
        self._whole_words = self.basic.never_split if self.do_basic_tokenize else frozenset()
        # The character maps of steps 2-3: all of them, then apart (for added tokens, matched between
        # the two as Hugging Face's tokenizers do); without the basic tokenizer, whitespace to " " only.
        whitespace = CharMap(lambda c: " " if c.isspace() else c)       # Python's str.split(), as HF's
        self._chars, self._normalizer, self._punctuation = (self.basic.chars, self.basic.normalizer,
            self.basic.punctuation) if self.do_basic_tokenize else (whitespace, whitespace, CharMap(str))
        self.pad_token_id, self.unk_token_id, self.cls_token_id, self.sep_token_id, self.mask_token_id = \
            (self.vocab[t] for t in SPECIAL_TOKENS)
        self._max_piece_chars = max(map(piece_length, self.vocab))
        self._pieces_of_word: dict[str, tuple[tuple[str, ...], tuple[tuple[int, int], ...]]] = {}
        self._warned_implicit_truncation = False
        # add_tokens: tokens matched as written (special) or after normalization, in the order added,
        # and those given ids after the vocabulary's
        self._special_tokens, self._normalized_tokens, self._added_tokens = list(SPECIAL_TOKENS), [], []
        self._compile_added_tokens()

    pad_token, unk_token, cls_token, sep_token, mask_token = SPECIAL_TOKENS
    special_tokens_map = dict(SPECIAL_NAMES)           # as transformers orders them: unk, sep, pad, cls, mask
    all_special_tokens = list(SPECIAL_NAMES.values())  # as transformers 5's: not the tokens added as special
    model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    pad_token_type_id = 0
    do_lower_case = property(lambda self: self.basic.do_lower_case)
    strip_accents = property(lambda self: self.basic.strip_accents)
    tokenize_chinese_chars = property(lambda self: self.basic.tokenize_chinese_chars)
    vocab_size = property(lambda self: len(self.vocab))
    all_special_ids = property(lambda self: [self.vocab[t] for t in self.all_special_tokens])
    max_len_single_sentence = property(lambda self: self.model_max_length - 2)
    max_len_sentences_pair = property(lambda self: self.model_max_length - 3)

    def __len__(self):
        """The vocabulary's size with the added tokens (vocab_size: without them)."""
        return len(self._added.id_tokens)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._added.token_ids)

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return 3 if pair else 2

    # ------------------------------------------------------------ added tokens

    def add_tokens(self, new_tokens, special_tokens: bool = False) -> int:
        """Add a token (a str) or tokens (a list of them), matched whole in the text before anything else is
        cut into words, each id the next after the vocabulary's (a token in the vocabulary keeps its id);
        -> how many the tokenizer did not have (of that kind), as transformers 5's BertTokenizer counts.
        A special token is found as written, as [MASK] is; any other in the normalized text, so that an
        uncased tokenizer finds "NewTok" in "newtok" and in "NEWTOK". The model reads the new ids once
        its word embeddings have len(tokenizer) rows."""
        new_tokens = [new_tokens] if isinstance(new_tokens, str) else new_tokens
        if not isinstance(new_tokens, (list, tuple)):
            raise InputError(f"add_tokens takes a str or a list of them, got {type(new_tokens).__name__}")
        for token in new_tokens:
            if not isinstance(token, str):
                raise InputError(f"add_tokens takes strings, got a {type(token).__name__}")
            if not (token if special_tokens else self._normalizer.apply(token)).strip():
                raise InputError(f"cannot add {token!r}: an added token needs a character that is not whitespace"
                                 + ("" if special_tokens else " or a control character, which normalization drops"))
        kind = self._special_tokens if special_tokens else self._normalized_tokens
        added = 0
        for token in new_tokens:
            if token not in kind:
                kind.append(token)
                added += 1
                if token not in self._added.token_ids:
                    self._added_tokens.append(token)
        self._compile_added_tokens()
        return added

    def _compile_added_tokens(self):
        """What the added tokens change, made again after each add_tokens (_Added)."""
        by_pattern = {}
        for token in self._normalized_tokens:
            by_pattern.setdefault(self._normalizer.apply(token), token)
        added, n = self._added_tokens, len(self.vocab)
        self._added = _Added(
            id_tokens=self.ids_to_tokens + added if added else self.ids_to_tokens,
            token_ids={**self.vocab, **{t: n + i for i, t in enumerate(added)}} if added else self.vocab,
            special_set=set(self._special_tokens),
            joined=(set(self._normalized_tokens) | set(added)) - set(SPECIAL_TOKENS),
            special_split=_alternatives(self._special_tokens, "(", ")"),
            special_hint="[" if all("[" in t for t in self._special_tokens) else "",   # "" is in every text
            by_pattern=by_pattern,
            normalized_split=_alternatives(by_pattern) if by_pattern else None)

    # ------------------------------------------------------------ loading and saving

    @classmethod
    def from_pretrained(cls, directory, **overrides):
        """A tokenizer from the files Hugging Face or npbert saved: vocab.txt (or tokenizer.json's
        vocabulary), the options in tokenizer_config.json, tokenizer.json's max_input_chars_per_word."""
        tokens, options, added = read_tokenizer_files(directory)
        tok = cls(tokens, **{**options, **overrides})
        for token_id, content, special in added:               # in id order: each new one gets the next id
            try:
                tok.add_tokens(content, special_tokens=special)
            except InputError as e:
                raise DataError(f"{directory}: tokenizer.json's added tokens: {e}") from None
            if tok.convert_tokens_to_ids(content) != token_id:
                raise DataError(f"{directory}: tokenizer.json gives the added token {content!r} id {token_id}, but "
                                f"after the vocabulary and the added tokens before it, it gets "
                                f"{tok.convert_tokens_to_ids(content)}")
        return tok

    def save_pretrained(self, directory) -> list[str]:
        """vocab.txt, tokenizer_config.json and tokenizer.json, which transformers' BertTokenizerFast
        and npbert load alike (but for max_input_chars_per_word: docs/tokenizer.md)."""
        return write_tokenizer_files(self, directory)

    def save_vocabulary(self, directory) -> str:
        return write_tokenizer_files(self, directory)[0]

    # ------------------------------------------------------------ text -> tokens

    def _pieces(self, word: str) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
        """WordPiece tokens of a word and the (start, end) characters of the word each covers."""
        cached = self._pieces_of_word.get(word)
        if cached is None:
            pieces = [word] if word in self._whole_words else \
                wordpiece(word, self.vocab, self.max_input_chars_per_word, self._max_piece_chars)
            if pieces is None:
                cached = (UNK,), ((0, len(word)),)
            else:
                ends = list(accumulate(map(piece_length, pieces)))
                cached = tuple(pieces), tuple(zip([0] + ends[:-1], ends))
            if len(self._pieces_of_word) >= 1 << 20:  # bound memory on huge corpora
                self._pieces_of_word.clear()
            self._pieces_of_word[word] = cached
        return cached

    def _segments(self, text: str) -> list[tuple[str, str | None]]:
        """The text in pieces, in order: (piece, its token) for a piece kept whole, a special token written
        in the text (HF's rule; tokens added as special too) or a never_split word; (piece, None) between."""
        _check_text(text)
        parts = self._added.special_split.split(text) if self._added.special_hint in text else [text]
        segments = []
        for i, part in enumerate(parts):
            if i % 2:
                segments.append((part, part))
                continue
            at = 0
            for start, end, word in self.basic.never_split_words(part) if self._whole_words else ():
                segments += [(part[at:start], None), (part[start:end], word)]
                at = end
            segments.append((part[at:], None))
        return segments

    def _words(self, text: str) -> list[tuple[str, list[int], int, str | None]]:
        """The words of a piece of text between kept tokens: (word, origin, at, added), the word at `at` in
        the normalized text whose i-th character comes from text[origin[i]]; added: the content of the
        added token the word is (None: a word for WordPiece). As Hugging Face's tokenizers, added tokens
        are found after the normalizer (steps 2-3 but the punctuation split), before the punctuation split."""
        if self._added.normalized_split is None:
            normalized, origin = self._chars.with_origin(text)
            return [(m.group(), origin, m.start(), None) for m in WORD.finditer(normalized)]
        normalized, origin = self._normalizer.with_origin(text)
        words, at = [], 0
        for match in [*self._added.normalized_split.finditer(normalized), None]:
            start, end = match.span() if match else (len(normalized), len(normalized))
            rest, rest_origin = self._punctuation.with_origin(normalized[at:start])
            rest_origin = [origin[at + i] for i in rest_origin]
            words += [(m.group(), rest_origin, m.start(), None) for m in WORD.finditer(rest)]
            if match:
                words.append((match.group(), origin, start, self._added.by_pattern[match.group()]))
            at = end
        return words

    def tokenize(self, text: str, pair: str | None = None, add_special_tokens: bool = False) -> list[str]:
        """The text's tokens (with add_special_tokens or a pair: the tokens of the encoded input)."""
        if pair is not None or add_special_tokens:
            return self(text, pair, add_special_tokens=add_special_tokens).tokens()
        if self._added.normalized_split is not None:
            return self.tokenize_with_offsets(text).tokens
        tokens = []
        for segment, kept in self._segments(text):
            if kept is not None:
                tokens.append(kept)
            else:
                for word in self._chars.apply(segment).split():
                    tokens.extend(self._pieces(word)[0])
        return tokens

    def tokenize_with_offsets(self, text: str) -> Tokenized:
        """Tokens with their (start, end) character offsets in `text` and their word index.
        An [UNK] spans its whole word; pieces made from one character all span that character."""
        tokens, offsets, word_ids = [], [], []
        base = 0
        for segment, kept in self._segments(text):
            if kept is not None:
                tokens.append(kept)
                offsets.append((base, base + len(segment)))
                word_ids.append(word_ids[-1] + 1 if word_ids else 0)
            else:
                for word, origin, at, added in self._words(segment):
                    word_id = word_ids[-1] + 1 if word_ids else 0
                    pieces, spans = ((added,), ((0, len(word)),)) if added else self._pieces(word)
                    tokens += pieces
                    offsets += [(base + origin[at + start], base + origin[at + end - 1] + 1) for start, end in spans]
                    word_ids += [word_id] * len(pieces)
            base += len(segment)
        return Tokenized(tokens, offsets, word_ids)

    def _sequence(self, text, is_split_into_words: bool, with_offsets: bool) -> Tokenized:
        """One side of an item: a text, or (is_split_into_words) a list of words, each tokenized on its
        own, its tokens' word id its index in the list and their offsets into it (as HF does)."""
        if not is_split_into_words:
            return self.tokenize_with_offsets(text) if with_offsets else Tokenized(self.tokenize(text), None, None)
        parts = [self.tokenize_with_offsets(word) if with_offsets else Tokenized(self.tokenize(word), None, None)
                 for word in text]
        tokens = [t for part in parts for t in part.tokens]
        if not with_offsets:
            return Tokenized(tokens, None, None)
        return Tokenized(tokens, [o for part in parts for o in part.offsets],
                         [w for w, part in enumerate(parts) for _ in part.tokens])

    # ------------------------------------------------------------ tokens <-> ids <-> text

    def convert_tokens_to_ids(self, tokens):
        """Unknown tokens map to [UNK]'s id; added tokens to theirs."""
        if isinstance(tokens, str):
            return self._added.token_ids.get(tokens, self.unk_token_id)
        return [self._added.token_ids.get(t, self.unk_token_id) for t in tokens]

    def convert_ids_to_tokens(self, ids, skip_special_tokens: bool = False):
        """skip_special_tokens leaves out all_special_tokens (not tokens added as special: transformers 5)."""
        if isinstance(ids, (int, np.integer)):
            return self._added.id_tokens[self._check_id(ids)]
        tokens = [self._added.id_tokens[self._check_id(i)] for i in ids]
        return [t for t in tokens if t not in SPECIAL_TOKENS] if skip_special_tokens else tokens

    def _check_id(self, token_id) -> int:
        if isinstance(token_id, (bool, np.bool_)) or not isinstance(token_id, (int, np.integer)) \
                or not 0 <= token_id < len(self._added.id_tokens):
            raise InputError(f"token id {token_id!r} is not in the vocabulary (0..{len(self._added.id_tokens) - 1})")
        return int(token_id)

    def convert_tokens_to_string(self, tokens) -> str:
        """The WordPiece decoder's text: "##" pieces glued to the token before, " ." and the like closed up."""
        return wordpiece_decode(tokens)

    def decode(self, token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=None,
               spaces_between_special_tokens=True) -> str:
        """convert_tokens_to_string of the ids' tokens (the special ones, added ones too, left out if asked),
        then HF's clean_up_tokenization ("don ' t" -> "don't") if clean_up_tokenization_spaces (None: the
        tokenizer's own setting, False unless its tokenizer_config.json says true, as transformers 5).
        spaces_between_special_tokens=False: tokens added with add_tokens are joined to the text around
        them without a space, as by transformers' Python tokenizer (whatever their name says)."""
        ids = np.asarray(token_ids).ravel().tolist() if isinstance(token_ids, np.ndarray) else token_ids
        tokens = self.convert_ids_to_tokens([ids] if isinstance(ids, (int, np.integer)) else ids)
        if skip_special_tokens:
            tokens = [t for t in tokens if t not in self._added.special_set]
        if spaces_between_special_tokens:
            text = wordpiece_decode(tokens)
        else:
            text = "".join("".join(run) if added else wordpiece_decode(list(run))
                           for added, run in groupby(tokens, self._added.joined.__contains__))
        clean = self.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None else clean_up_tokenization_spaces
        return clean_up_tokenization(text) if clean else text

    def batch_decode(self, sequences, skip_special_tokens=False, clean_up_tokenization_spaces=None,
                     spaces_between_special_tokens=True) -> list[str]:
        return [self.decode(ids, skip_special_tokens, clean_up_tokenization_spaces, spaces_between_special_tokens)
                for ids in sequences]

    # ------------------------------------------------------------ ids with special tokens, as a call puts them

    def build_inputs_with_special_tokens(self, token_ids_0, token_ids_1=None) -> list[int]:
        """[CLS] a [SEP] (b [SEP]) of ids without special tokens."""
        return _template(self._sides(token_ids_0, token_ids_1), self.cls_token_id, self.sep_token_id)[0]

    def create_token_type_ids_from_sequences(self, token_ids_0, token_ids_1=None) -> list[int]:
        """The token type of each id of build_inputs_with_special_tokens: 0 for [CLS] a [SEP], 1 for b [SEP]."""
        return _template(self._sides(token_ids_0, token_ids_1), None, None)[1]

    def get_special_tokens_mask(self, token_ids_0, token_ids_1=None, already_has_special_tokens=False) -> list[int]:
        """1 where [CLS] [SEP] go (or, already_has_special_tokens, where a special token's id is), else 0."""
        if already_has_special_tokens:
            if token_ids_1 is not None:
                raise InputError("get_special_tokens_mask: with already_has_special_tokens, the ids are one "
                                 "sequence (token_ids_0); token_ids_1 must be None")
            special = set(self.all_special_ids)
            return [int(i in special) for i in self._id_list(token_ids_0)]
        return _template(self._sides(token_ids_0, token_ids_1), None, None)[2]

    def _sides(self, token_ids_0, token_ids_1) -> list[list[int]]:
        return [self._id_list(ids) for ids in (token_ids_0, token_ids_1) if ids is not None]

    def _id_list(self, ids) -> list[int]:
        """Token ids (a list, tuple or 1-d array of ids in the vocabulary) as a list of ints."""
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise InputError(f"expected a list of token ids, got {type(ids).__name__}")
        return [self._check_id(i) for i in ids]

    # ------------------------------------------------------------ encoding for the model

    def encode(self, text, text_pair=None, add_special_tokens=True, **options) -> list[int]:
        """The input_ids of one text (or pair); options as __call__'s."""
        return self.encode_plus(text, text_pair, add_special_tokens=add_special_tokens, **options)["input_ids"]

    def encode_plus(self, text, text_pair=None, **options) -> Encoding:
        """One text (or pair) encoded: the call's result (transformers 4's name; 5 deprecated it for the call)."""
        if _as_items(text, text_pair, options.get("is_split_into_words", False))[0]:
            raise InputError("encode and encode_plus take one text (or pair), not a list of them: give a batch to "
                             "the call or to batch_encode_plus")
        return self(text, text_pair, **options)

    def batch_encode_plus(self, batch_text_or_text_pairs, **options) -> Encoding:
        """A batch (a list of texts, of (text, text_pair) pairs or, is_split_into_words, of lists of words)
        encoded: the call's result (transformers 4's name; 5 deprecated it for the call)."""
        if not _as_items(batch_text_or_text_pairs, None, options.get("is_split_into_words", False))[0]:
            raise InputError("batch_encode_plus takes a batch: a list of texts, of (text, text_pair) pairs or, "
                             "with is_split_into_words, of lists of words")
        return self(batch_text_or_text_pairs, **options)

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

    def _encode_item(self, text, text_pair, o: _Options) -> list[dict]:
        """One text (or pair) -> its rows: the one truncation keeps, then the overflowing windows."""
        sequences = [self._sequence(t, o.is_split_into_words, o.with_offsets)
                     for t in ((text,) if text_pair is None else (text, text_pair))]
        lengths = tuple(len(s.tokens) for s in sequences)
        rows = [tuple((0, n) for n in lengths)]
        if o.truncation:
            n_special = (len(sequences) + 1) if o.add_special_tokens else 0
            limit = self.model_max_length if o.max_length is None else o.max_length
            if limit < n_special:
                raise InputError(f"max_length={limit} leaves no room for the {n_special} special tokens")
            if limit == n_special and o.overflowing:   # no token a window: Rust's one window is the whole text
                raise InputError(f"max_length={limit} leaves no token for the windows of return_overflowing_tokens "
                                 f"beside the {n_special} special tokens: give at least {n_special + 1}")
            rows = truncation_windows(lengths, o.truncation, limit - n_special, o.stride, self.truncation_side)
        return [self._row(list(zip(sequences, spans)), o) for spans in (rows if o.overflowing else rows[:1])]

    def _row(self, sides, o: _Options) -> dict:
        """One row from (Tokenized, (start, stop)) per side: [CLS] a [SEP] (b [SEP]), every output of it,
        and (with offsets) the word ids, -1 for a special token (the alignment's token strings follow
        from the ids, its sequence ids from the token types and the special-tokens mask)."""
        k = int(o.add_special_tokens)                  # [CLS] before, [SEP] after each side
        tokens, types, special = _template([seq.tokens[start:stop] for seq, (start, stop) in sides], CLS, SEP, k)
        row = {"input_ids": self.convert_tokens_to_ids(tokens), "token_type_ids": types,
               "attention_mask": [1] * len(tokens), "special_tokens_mask": special}
        if o.with_offsets:
            row.update(offset_mapping=_template([seq.offsets[start:stop] for seq, (start, stop) in sides],
                                                (0, 0), (0, 0), k)[0],
                       word_ids=_template([seq.word_ids[start:stop] for seq, (start, stop) in sides], -1, -1, k)[0])
        return row

    def _rows(self, items, o: _Options) -> tuple[list, list]:
        """(every row, padded, the item each row is from) of a call's items."""
        rows, mapping = [], []
        for i, (a, b) in enumerate(items):
            item_rows = self._encode_item(a, b, o)
            rows += item_rows
            mapping += [i] * len(item_rows)
        limit = self.model_max_length if o.max_length is None else o.max_length
        width = target_width([len(r["input_ids"]) for r in rows], o.padding, limit, o.pad_to_multiple_of)
        if width is not None:
            rows = [pad_row(r, width, o.padding_side, self.pad_token_id) for r in rows]
        return rows, mapping

    def __call__(self, text, text_pair=None, add_special_tokens=True, padding=False, truncation=None,
                 max_length=None, stride=0, is_split_into_words=False, pad_to_multiple_of=None, padding_side=None,
                 return_tensors=None, return_token_type_ids=None, return_attention_mask=None,
                 return_overflowing_tokens=False, return_special_tokens_mask=False, return_offsets_mapping=False,
                 return_length=False, return_word_ids=False) -> Encoding:
        """Encode a text, a pair (text, text_pair), or a batch (a list of texts or of (a, b) pairs, or
        two lists; with is_split_into_words, a list of words is one text and a list of such lists a
        batch), as transformers' BertTokenizerFast does (docs/tokenizer.md): input_ids,
        token_type_ids, attention_mask, and on request special_tokens_mask, offset_mapping ((start,
        end) characters of the original text, (0, 0) for special tokens and padding), length,
        overflow_to_sample_mapping, and npbert's word_ids (-1 for special tokens and padding).

        truncation: True/"longest_first", "only_first", "only_second", False (unset with a max_length
        and padding=False: "longest_first", HF's rule, warned once); the tokenizer's truncation_side.
        return_overflowing_tokens: every window of `max_length` (with `stride` tokens shared between
        consecutive windows) as a row of its own, overflow_to_sample_mapping naming its item.
        padding: False, True/"longest" or "max_length", rounded up to pad_to_multiple_of, on
        padding_side (default: the tokenizer's). return_tensors: None or "np".
        Without max_length, truncation and padding="max_length" use model_max_length."""
        batch, items = _as_items(text, text_pair, is_split_into_words)
        o = self._options(add_special_tokens, padding, truncation, max_length, stride, is_split_into_words,
                          pad_to_multiple_of, padding_side, return_offsets_mapping or return_word_ids,
                          return_overflowing_tokens)
        if return_tensors not in (None, "np"):
            raise InputError(f"return_tensors must be None or 'np', got {return_tensors!r}")
        rows, mapping = self._rows(items, o)
        keys = ["input_ids"] + ["token_type_ids"] * (return_token_type_ids is not False) + \
            ["attention_mask"] * (return_attention_mask is not False) + \
            ["special_tokens_mask"] * bool(return_special_tokens_mask) + \
            ["offset_mapping"] * bool(return_offsets_mapping) + ["word_ids"] * bool(return_word_ids)
        batched = batch or return_overflowing_tokens
        out = {k: [r[k] for r in rows] if batched else rows[0][k] for k in keys}
        if return_length:
            out["length"] = [len(r["input_ids"]) for r in rows]
        if return_overflowing_tokens:
            out["overflow_to_sample_mapping"] = mapping
        if return_tensors == "np":
            out = _as_arrays(out, batched)

        def align():                                   # the same rows again, with offsets, when first asked
            aligned = rows if o.with_offsets else self._rows(items, o._replace(with_offsets=True))[0]
            return [self._alignment(r) for r in aligned]
        return Encoding(out, align, batched)

    def _alignment(self, row: dict) -> Alignment:
        """A row's alignment as transformers gives it: its tokens' strings, None for no word, and a
        token's sequence the side it is from (its token type), None for [CLS], [SEP] and padding."""
        words = [None if w < 0 else w for w in row["word_ids"]]
        sequences = [None if special else side for side, special in zip(row["token_type_ids"],
                                                                          row["special_tokens_mask"])]
        return Alignment(self.convert_ids_to_tokens(row["input_ids"]), words, sequences, row["offset_mapping"])

    def _options(self, add_special_tokens, padding, truncation, max_length, stride, is_split_into_words,
                 pad_to_multiple_of, padding_side, with_offsets, overflowing) -> _Options:
        """__call__'s options checked, with HF's defaults and rules applied."""
        max_length, stride = _count("max_length", max_length, 1), _count("stride", stride, 0)
        truncation = _check_choice("truncation", self._implicit_truncation(truncation, max_length, padding),
                                   _TRUNCATION)
        padding = _check_choice("padding", padding, _PADDING)
        padding_side = self.padding_side if padding_side is None else padding_side
        check_padding_options(padding_side, pad_to_multiple_of)
        if truncation and padding and pad_to_multiple_of and max_length is not None and max_length % pad_to_multiple_of:
            raise InputError(f"truncation and padding are both on but max_length={max_length} is not a multiple of "
                             f"pad_to_multiple_of={pad_to_multiple_of}")
        return _Options(bool(add_special_tokens), truncation, max_length, stride, bool(is_split_into_words),
                        bool(with_offsets), bool(overflowing), padding, pad_to_multiple_of, padding_side)

    def pad(self, encoded_inputs, padding=True, max_length=None, pad_to_multiple_of=None, padding_side=None,
            return_attention_mask=None, return_tensors=None) -> Encoding:
        """Pad what __call__ returned unpadded (a dict of lists, or a list of such dicts, one per row):
        input_ids, token_type_ids, special_tokens_mask and an attention_mask (made if missing), as
        transformers' pad(); other keys are kept as they are."""
        rows, batched = _rows_of(encoded_inputs)
        padding = _check_choice("padding", padding, _PADDING)
        padding_side = self.padding_side if padding_side is None else padding_side
        check_padding_options(padding_side, pad_to_multiple_of)
        if return_attention_mask is not False:
            rows = [{**r, "attention_mask": r.get("attention_mask", [1] * len(r["input_ids"]))} for r in rows]
        limit = self.model_max_length if max_length is None else max_length
        width = target_width([len(r["input_ids"]) for r in rows], padding, limit, pad_to_multiple_of)
        padded = {"input_ids", "token_type_ids", "attention_mask", "special_tokens_mask"}
        if width is not None:
            rows = [{**r, **pad_row({k: v for k, v in r.items() if k in padded}, width, padding_side,
                                    self.pad_token_id)} for r in rows]
        out = {k: [r[k] for r in rows] if batched else rows[0][k] for k in rows[0]} if rows else {}
        return Encoding(_as_arrays(out, batched) if return_tensors == "np" else out, None, batched)


def _template(sides, cls, sep, k=1) -> tuple[list, list, list]:
    """BERT's template over one or two sides (lists): [cls] a [sep] (b [sep]) (with k=0: a b), each
    position's token type, and 1 where the template put a token, 0 where a side's."""
    out, types, special = [cls] * k, [0] * k, [1] * k
    for side, seq in enumerate(sides):
        out += [*seq, *[sep] * k]
        types += [side] * (len(seq) + k)
        special += [0] * len(seq) + [1] * k
    return out, types, special


def _alternatives(strings, before="", after=""):
    """A regex matching any of the strings, the longest where several start at one place."""
    return regex.compile(before + "|".join(map(regex.escape, sorted(strings, key=len, reverse=True))) + after)


def _count(name, value, least):
    """An integer option (a Python or NumPy integer, not a bool, as transformers takes them) as an
    int, or None when not given."""
    if value is None:
        return None
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < least:
        raise InputError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(value)


def _rows_of(encoded_inputs) -> tuple[list, bool]:
    """pad()'s input as rows (dicts of lists) and whether it was a batch."""
    if isinstance(encoded_inputs, (list, tuple)):
        if not all(isinstance(r, dict) and "input_ids" in r for r in encoded_inputs):
            raise InputError("pad() takes a dict of lists or a list of dicts, each with input_ids")
        return [{k: list(v) for k, v in r.items()} for r in encoded_inputs], True
    if not isinstance(encoded_inputs, dict) or "input_ids" not in encoded_inputs:
        raise InputError("pad() takes a dict of lists or a list of dicts, each with input_ids")
    ids = encoded_inputs["input_ids"]
    if ids and isinstance(ids[0], (list, tuple, np.ndarray)):
        return [{k: list(v[i]) for k, v in encoded_inputs.items()} for i in range(len(ids))], True
    return [{k: list(v) for k, v in encoded_inputs.items()}], False


def _as_arrays(out: dict, batched: bool) -> dict:
    """return_tensors='np': int64 arrays, a batch axis first (one text: a batch of one)."""
    lengths = {len(r) for r in (out["input_ids"] if batched else [out["input_ids"]])}
    if len(lengths) > 1:
        raise InputError("return_tensors='np' needs sequences of one length: pass padding=True")
    return {k: np.array(v if batched or k in ("length", "overflow_to_sample_mapping") else [v], dtype=np.int64)
            for k, v in out.items()}


def _check_text(text):
    if not isinstance(text, str):
        raise InputError(f"text must be a str, got {type(text).__name__}")


def _check_choice(name, value, choices: dict):
    try:
        return choices[value]
    except (KeyError, TypeError):
        raise InputError(f"{name} must be one of {list(choices)}, got {value!r}") from None


def _is_pair(item) -> bool:
    return isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(s, str) for s in item)


def _is_words(item) -> bool:
    return isinstance(item, (list, tuple)) and all(isinstance(w, str) for w in item)


def _as_items(text, text_pair, is_split_into_words=False) -> tuple[bool, list]:
    """(is_batch, [(text, pair or None)]) from the ways __call__ accepts its input; with
    is_split_into_words a text is a list of words."""
    one = _is_words if is_split_into_words else (lambda t: isinstance(t, str))
    what = "a list of words" if is_split_into_words else "a str"
    if one(text):
        if text_pair is not None and not one(text_pair):
            raise InputError(f"text_pair must be {what} when text is, got {type(text_pair).__name__}")
        return False, [(text, text_pair)]
    if not isinstance(text, (list, tuple)):
        raise InputError(f"text must be {what}, a list of them or a list of pairs of them, got {type(text).__name__}")
    if text_pair is not None:
        if not isinstance(text_pair, (list, tuple)) or len(text_pair) != len(text):
            raise InputError("with a batch of texts, text_pair must be a list of the same length")
        items = list(zip(text, text_pair))
    elif is_split_into_words:
        items = [(t, None) for t in text]
    else:
        items = [tuple(t) if _is_pair(t) else (t, None) for t in text]
    for a, b in items:
        if not one(a) or (b is not None and not one(b)):
            bad = a if not one(a) else b
            raise InputError(f"text must be {what} (a batch: a list of them), got {type(bad).__name__} in the batch")
    return True, items
