"""Tokenizer golden cases over inputs chosen to break a port's tokenizer: accents (with and without
strip_accents), CJK ideographs next to kana, control, format and zero-width characters, Unicode
whitespace, every class of punctuation (ASCII symbols BERT counts as punctuation, Unicode P*),
literal special tokens, a word longer than max_input_chars_per_word, a piece no vocabulary entry
matches ([UNK]), and text pairs truncated `longest_first` to max_length. Each case is one
vocabulary and one setting of the tokenizer, all recorded in its constants; the outputs are the
ids, token types, mask and character offsets, for the texts (padded into one batch) and for
the pairs (truncated, padded).
"""
from __future__ import annotations

import numpy as np

from npbert.data.builtin_vocab import builtin_vocab
from npbert.golden.cases import GoldenCase
from npbert.tokenizer import BertTokenizer

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
)
HARD_PAIRS = (
    ("a short question?", "a much longer context sentence that must lose its tail when the pair is truncated"),
    ("a first text that is longer than the second one, by far", "short second"),
    ("café 中文", "running\u200b unwanted"),
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


def tokenizer_cases(vocabularies: dict) -> list:
    """A case per vocabulary (name -> (token list, the constants that name it)) and setting."""
    cases = []
    for vocab_name, (tokens, vocab_constants) in vocabularies.items():
        for setting, options in SETTINGS.items():
            tok = BertTokenizer(list(tokens), **options)
            constants = {**vocab_constants, "do_lower_case": tok.do_lower_case,
                         "strip_accents": tok.strip_accents, "tokenize_chinese_chars": tok.tokenize_chinese_chars,
                         "max_input_chars_per_word": tok.max_input_chars_per_word, "texts": list(HARD_TEXTS),
                         "text_pairs": [list(p) for p in HARD_PAIRS], "pair_max_length": PAIR_MAX_LENGTH,
                         "pair_truncation": "longest_first", "padding": "longest",
                         "special_tokens": "[CLS] text [SEP] (pairs: [CLS] a [SEP] b [SEP], token type 1 from b)"}
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
