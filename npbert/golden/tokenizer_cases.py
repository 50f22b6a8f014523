"""Tokenizer golden cases over inputs chosen to break a port's tokenizer: accents (with and without
strip_accents), CJK ideographs next to kana and outside the BMP (either side of the Extension E
boundary), control, format and zero-width characters, Unicode whitespace, every class of
punctuation (ASCII symbols BERT counts as punctuation, Unicode P*), literal special tokens, words
longer than max_input_chars_per_word before normalisation and not after, a piece no vocabulary
entry matches ([UNK]), and text pairs truncated `longest_first` to max_length, some with both sides
over half the budget. Each case is one vocabulary and one setting of the tokenizer, every setting
and rule recorded in its constants; the outputs are the ids, token types, mask and character
offsets, for the texts (padded into one batch) and for the pairs (truncated, padded).
"""
from __future__ import annotations

import numpy as np

from npbert.data.builtin_vocab import builtin_vocab
from npbert.golden.cases import GoldenCase
from npbert.tokenizer import BertTokenizer
from npbert.tokenizer.normalize import CJK_RANGES

HARD_TEXTS = (
    "Héllo wörld, naïve café: CAFÉ Ünïcödé ÀÉÎÕÜ",
    "UNwant\u00e9d,running wanted unwanted",
    "中文字符和日本語のテキスト mixed中文text",
    "tab\there\u200bzero\u200dwidth\x00null\x07bell\ufeffbom\u00adsoft\r\nline",
    "ideographic\u3000space\xa0nbsp\u2003em\u2028sep",
    "a$b^c`d~e\u2026f\u2014g\u00abh\u00bbi\u00bfj\u00a7k@l#m%n&o*p_q\\r",
    "[CLS] literal [MASK] and [SEP] stay whole, [unused0] does not",
    "want" * 40 + " runn ##ing",                       # 160 characters: one word under 200, over 100
    "xyzzyq wantxq qwant",                             # pieces no entry matches: [UNK]
    # Outside the BMP: offsets count code points (not UTF-16 units); U+20000 (Extension B) and U+2F800
    # are CJK, U+2B820 is not (the Rust tokenizer's Extension E starts at U+2B920; the slow one's at U+2B820).
    "\U00020000中文 a\U0002B820a a\U0002B920a \U0002F800text",
    # max_input_chars_per_word counts the normalised word: stripping the accents (NFD e + U+0301) takes
    # each word from 203 and 103 characters to 103 and 53, across the limits 200 and 100.
    "caf" + "e\u0301" * 100 + " caf" + "e\u0301" * 50,
)
HARD_PAIRS = (
    ("a short question?", "a much longer context sentence that must lose its tail when the pair is truncated"),
    ("a first text that is longer than the second one, by far", "short second"),
    ("café 中文", "running\u200b unwanted"),
    # Both sides over half the budget (11 // 2 = 5 tokens): the shorter keeps 5, the longer 6. Cutting
    # only the longer side (7, 4), or one token at a time from the longer (6, 5), gives other lengths.
    ("the first long world a short hello", "hello world the second long first a short"),
    ("a short world the long first hello", "the hello long first short world a"),
)
PAIR_MAX_LENGTH = 14
# A small vocabulary whose ## pieces exercise greedy longest match (docs/design.md's WordPiece golden, extended).
RULES_VOCAB = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "want", "##want", "##ed", "wa", "un", "runn", "##ing",
               ",", ".", ":", "?", "a", "##s", "cafe", "café", "caf", "##e", "##é", "中", "文", "text", "mixed",
               "naive",
               "world", "hello", "##o", "short", "second", "first", "long", "##er", "the")
SETTINGS = {                                           # name -> BertTokenizer options
    "uncased": dict(do_lower_case=True, strip_accents=None),
    "uncased_keep_accents": dict(do_lower_case=True, strip_accents=False),
    "cased": dict(do_lower_case=False, strip_accents=None),
    "cased_strip_accents": dict(do_lower_case=False, strip_accents=True),
    "no_cjk_split": dict(do_lower_case=True, strip_accents=None, tokenize_chinese_chars=False),
    "max_word_chars_100": dict(do_lower_case=True, strip_accents=None, max_input_chars_per_word=100),
}


def tokenizer_settings(tok) -> dict:
    """Every setting and rule a port's tokenizer must share with `tok`, for a case's constants."""
    return {"do_lower_case": tok.do_lower_case, "strip_accents": tok.strip_accents,
            "tokenize_chinese_chars": tok.tokenize_chinese_chars,
            "cjk_ranges": [f"U+{lo:04X}-U+{hi:04X}" for lo, hi in CJK_RANGES],
            "max_input_chars_per_word": tok.max_input_chars_per_word,
            "max_input_chars_per_word_counts": "the code points of the word after normalisation (lower-casing, "
                                               "accent stripping), before WordPiece",
            "special_tokens": "[CLS] text [SEP] (pairs: [CLS] a [SEP] b [SEP], token type 1 from b); literal "
                              "[PAD] [UNK] [CLS] [SEP] [MASK] in a text stay whole",
            "offsets": "(start, end) in code points (Python str indices, not UTF-16 units or bytes) of the original "
                       "text the token is from: a pair's tokens index into their own text (token type 0: the "
                       "first, 1: the second); (0, 0) for special tokens and padding",
            "padding": "longest", "pad_token_id": tok.pad_token_id}


def tokenizer_cases(vocabularies: dict) -> list:
    """A case per vocabulary (name -> (token list, the constants that name it)) and setting."""
    cases = []
    for vocab_name, (tokens, vocab_constants) in vocabularies.items():
        for setting, options in SETTINGS.items():
            tok = BertTokenizer(list(tokens), **options)
            constants = {**vocab_constants, **tokenizer_settings(tok), "texts": list(HARD_TEXTS),
                         "text_pairs": [list(p) for p in HARD_PAIRS], "pair_max_length": PAIR_MAX_LENGTH,
                         "pair_truncation": "longest_first: budget = pair_max_length - 3; if both sides fit none "
                                            "is cut, else the shorter side keeps min(its length, budget // 2) (the "
                                            "first side when equal) and the longer the rest; tokens go from the end"}
            tensors = encode(tok, list(HARD_TEXTS), None, {})
            tensors.update(encode(tok, [a for a, _ in HARD_PAIRS], [b for _, b in HARD_PAIRS],
                                  dict(truncation="longest_first", max_length=PAIR_MAX_LENGTH), prefix="pair/"))
            cases.append(GoldenCase(f"tokenizer[{vocab_name},{setting}]", "int64", "tokenizer",
                                    f"BertTokenizer with the {vocab_name} vocabulary, {setting}: the hard texts "
                                    "(padded) and the pairs (truncated longest_first to pair_max_length, padded): "
                                    "ids, token types, mask, (start, end) character offsets, (0, 0) for special "
                                    "tokens and padding", constants, tensors, [], []))
    return cases


def encode(tok, texts, pairs, options, prefix="") -> dict:
    enc = tok(texts, pairs, padding=True, return_offsets_mapping=True, return_tensors="np", **options)
    return {prefix + k: ("output", np.asarray(enc[k], np.int64))
            for k in ("input_ids", "token_type_ids", "attention_mask", "offset_mapping")}


def default_vocabularies() -> dict:
    """The vocabularies of the default goldens, each listed whole in its cases' constants."""
    return {"builtin": (builtin_vocab(), {"vocab": "npbert's built-in vocabulary (whole words only)",
                                          "vocab_tokens": builtin_vocab()}),
            "rules": (list(RULES_VOCAB), {"vocab": "a small vocabulary whose ## pieces exercise greedy longest match",
                                          "vocab_tokens": list(RULES_VOCAB)})}
