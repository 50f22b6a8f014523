"""Fuzzing the tokenizer with arbitrary Unicode: every code point but surrogates, weighted toward
the characters tokenizers get wrong (NUL, U+FFFD, controls, zero-width and bidi marks, lone
combining marks, CJK, emoji with modifiers and joiners, RTL scripts, characters whose lower
case or NFD is longer, literal special tokens). For every casing option: no exception, offsets
inside the text and in order, and with a vocabulary of every character nothing is lost. Then
the files from_pretrained reads, mutated: a tokenizer or an npbert error."""
import functools
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npbert.errors import DataError, InputError
from npbert.tokenizer import CONTINUATION, SPECIAL_TOKENS, BasicTokenizer, BertTokenizer, \
    clean_up_tokenization
from npbert.tokenizer.vocab import UNK
from support.fuzzing import fuzz, json_mutated, mutated, outcome

TRICKY = ["\x00", "\ufffd", "\x01", "\x1f", "\x7f", "\x85", "\u200b", "\u200d", "\ufeff", "\u00ad", "\u202e",
          "\u2066", "\u0301", "\u0300\u0327", "\u20dd", "\u3000", "\u2028", "\u00a0", "\t", "\n", "\r", "\x0b",
          " ", "中", "文", "\U00020000", "\uf900", "\u3042", "한", "😀", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷",
          "\u05d0", "\u05b7", "\u0628", "\u064e", "\u0661", "İ", "ß", "ﬁ", "Σ", "ǅ", "Ⅻ", "\u1e9e", "\u0390",
          "\ue000", "\U000e0001", "\u0378", "\U0010ffff", "#", "##", "'", ".", ",", "n't", "'s", " .",
          "[MASK]", "[UNK]", "[CLS]", "[SEP]", "[PAD]", "[mask]", "[", "]", "$", "^", "`", "~", "x", "A", "é"]
texts = st.lists(st.sampled_from(TRICKY) | st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
                 max_size=24).map("".join)
# (do_lower_case, strip_accents, tokenize_chinese_chars): uncased, cased, and the two in between
OPTIONS = [(True, None, True), (False, None, True), (True, False, True), (False, True, False)]
SPECIAL = re.compile("(" + "|".join(map(re.escape, SPECIAL_TOKENS)) + ")")


def segments(text):
    """The text cut around literal special tokens, which stay whole: odd positions are specials."""
    return SPECIAL.split(text)


def words_of(basic: BasicTokenizer, text) -> list:
    """The words the tokenizer should make: each segment normalized and split on whitespace,
    the special tokens whole."""
    return [w for i, s in enumerate(segments(text)) for w in ([s] if i % 2 else basic.normalize(s).split())]


def char_vocab(basic: BasicTokenizer, text) -> list:
    """The special tokens, and every character of the normalized text as a word start and as a ## piece."""
    chars = sorted({c for i, s in enumerate(segments(text)) if not i % 2 for c in basic.normalize(s)} - {" "})
    return list(SPECIAL_TOKENS) + chars + [CONTINUATION + c for c in chars]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "lower={} strip={} cjk={}".format(*o))
@fuzz
@given(text=texts)
def test_normalize_keeps_track_of_every_character(options, text):
    basic = BasicTokenizer(*options)
    normalized, origin = basic.normalize_with_origin(text)
    assert normalized == basic.normalize(text) and len(origin) == len(normalized)
    assert origin == sorted(origin) and all(0 <= i < len(text) for i in origin)
    assert all(c == " " or not c.isspace() for c in normalized)   # split() and [^ ]+ see the same words


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "lower={} strip={} cjk={}".format(*o))
@fuzz
@given(text=texts, vocab_chars=st.text(max_size=20))
def test_offsets_are_inside_the_text_and_in_order(options, text, vocab_chars):
    """With a vocabulary of a few random characters (so [UNK] is common): the tokens of tokenize,
    of tokenize_with_offsets and of __call__ agree; each real token spans 0 <= start < end <=
    len(text); starts and ends never go back; word ids count up from 0 by steps of 0 or 1."""
    chars = sorted(set(vocab_chars) - set(" \n"))
    tok = BertTokenizer(list(SPECIAL_TOKENS) + chars + [CONTINUATION + c for c in chars], *options)
    tokens, offsets, word_ids = tok.tokenize_with_offsets(text)
    assert tokens == tok.tokenize(text) and len(offsets) == len(word_ids) == len(tokens)
    assert all(0 <= start < end <= len(text) for start, end in offsets)
    starts, ends = [s for s, _ in offsets], [e for _, e in offsets]
    assert starts == sorted(starts) and ends == sorted(ends)
    assert all(b - a in (0, 1) for a, b in zip([-1] + word_ids, word_ids))
    enc = tok(text, return_offsets_mapping=True, return_word_ids=True)
    assert enc["input_ids"] == tok.encode(text) == [tok.cls_token_id] + tok.convert_tokens_to_ids(tokens) + \
        [tok.sep_token_id]
    assert enc["offset_mapping"] == [(0, 0)] + offsets + [(0, 0)]
    assert enc["word_ids"] == [-1] + word_ids + [-1]


_PIECES = st.lists(st.sampled_from(TRICKY) | st.text(max_size=4), max_size=4)


@fuzz
@given(text=texts, added=_PIECES, special=st.booleans(), never_split=_PIECES, options=st.sampled_from(OPTIONS),
       do_basic_tokenize=st.booleans())
def test_added_tokens_and_never_split_keep_offsets_in_order(text, added, special, never_split, options,
                                                           do_basic_tokenize):
    """With tokens added (special or not) and never_split words drawn from the same characters: the
    tokens of tokenize, of tokenize_with_offsets and of __call__ agree, each has an id or is a
    never_split word, and the offsets are inside the text and in order."""
    tok = BertTokenizer(list(SPECIAL_TOKENS) + ["x", "##x"], *options, never_split=never_split,
                        do_basic_tokenize=do_basic_tokenize)
    for token in added:
        try:
            tok.add_tokens(token, special_tokens=special)
        except InputError as e:                      # a token of whitespace (and control characters) only
            assert not tok.basic.normalize(token).strip() and "needs a character" in str(e)
    tokens, offsets, word_ids = tok.tokenize_with_offsets(text)
    assert tokens == tok.tokenize(text) and len(offsets) == len(word_ids) == len(tokens)
    assert all(t in tok.get_vocab() or t in tok.basic.never_split for t in tokens)
    assert all(0 <= start < end <= len(text) for start, end in offsets)
    starts, ends = [s for s, _ in offsets], [e for _, e in offsets]
    assert starts == sorted(starts) and ends == sorted(ends)
    assert all(b - a in (0, 1) for a, b in zip([-1] + word_ids, word_ids))
    enc = tok(text, return_offsets_mapping=True, return_word_ids=True)
    assert enc["input_ids"] == [tok.cls_token_id] + tok.convert_tokens_to_ids(tokens) + [tok.sep_token_id]
    assert enc["offset_mapping"] == [(0, 0)] + offsets + [(0, 0)] and enc["word_ids"] == [-1] + word_ids + [-1]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "lower={} strip={} cjk={}".format(*o))
@fuzz
@given(text=texts)
def test_a_vocabulary_of_every_character_loses_nothing(options, text):
    """The vocabulary holds every character c of the normalized text as "c" and "##c", so
    WordPiece splits each word w into w[0], ##w[1], ... (no [UNK] except one written in the text),
    and decode glues the ## pieces back: decode(encode(text)) is

        joined = " ".join(["[CLS]"] + words + ["[SEP]"]), without the space before . , ! ?

    where words are BasicTokenizer.normalize(segment).split() for the segments between the
    special tokens written in the text (which are words of their own): the WordPiece decoder
    cleans each token of it, and punctuation marks are words of their own. With
    clean_up_tokenization_spaces it is clean_up_tokenization(joined), Hugging Face's (also no space
    in "n't", "'s", ...); with skip_special_tokens the special tokens are left out. And each
    token's offsets span the text it came from: a special token itself, a piece's character
    within the normalized span."""
    basic = BasicTokenizer(*options)
    words = words_of(basic, text)
    tok = BertTokenizer(char_vocab(basic, text), *options,
                        max_input_chars_per_word=1 + sum(map(len, words)))   # no word too long
    tokens = tok.tokenize(text)
    assert tokens == [p for w in words for p in ([w] if w in SPECIAL_TOKENS else
                                                 [w[0]] + [CONTINUATION + c for c in w[1:]])]
    assert (UNK in tokens) == ("[UNK]" in text)
    for token, (start, end) in zip(*tok.tokenize_with_offsets(text)[:2]):   # each token spans its own text
        if token in SPECIAL_TOKENS:
            assert text[start:end] == token
        else:
            assert token.removeprefix(CONTINUATION) in basic.normalize(text[start:end])
    ids = tok.encode(text)
    joined = " ".join(["[CLS]"] + words + ["[SEP]"])
    assert tok.decode(ids) == functools.reduce(lambda t, p: t.replace(" " + p, p), ".?!,", joined)
    assert tok.decode(ids, clean_up_tokenization_spaces=True) == clean_up_tokenization(joined)
    assert tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=True) == \
        clean_up_tokenization(" ".join(w for w in words if w not in SPECIAL_TOKENS))


@fuzz
@given(text=texts, pair=texts, max_length=st.integers(3, 40), options=st.sampled_from(OPTIONS))
def test_pairs_truncated_and_padded(text, pair, max_length, options):
    """Pairs of arbitrary texts, truncated and padded: max_length rows, offsets inside their own text."""
    chars = sorted({c for c in text + pair if not c.isspace()})
    tok = BertTokenizer(list(SPECIAL_TOKENS) + chars + [CONTINUATION + c for c in chars], *options)
    enc = tok([(text, pair)], truncation=True, max_length=max_length, padding="max_length",
              return_offsets_mapping=True, return_tensors="np")
    assert enc["input_ids"].shape == enc["offset_mapping"].shape[:2] == (1, max_length)
    for type_id, source in ((0, text), (1, pair)):
        real = (enc["token_type_ids"][0] == type_id) & (enc["offset_mapping"][0, :, 1] > 0)
        assert (enc["offset_mapping"][0, real, 1] <= len(source)).all()


# --- the files a tokenizer is read from -----------------------------------------------------------

TOKENIZER_FILES = {"vocab.txt": "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n##s\n",
                   "tokenizer_config.json": json.dumps({"do_lower_case": True, "strip_accents": None,
                                                        "max_input_chars_per_word": 100, "model_max_length": 512,
                                                        "never_split": ["The"], "do_basic_tokenize": True}),
                   "tokenizer.json": json.dumps({"model": {"type": "WordPiece", "max_input_chars_per_word": 100},
                                                 "added_tokens": [
                                                     {"id": 0, "content": "[PAD]", "normalized": False, "special": True},
                                                     {"id": 7, "content": "NewTok", "single_word": False, "lstrip": False,
                                                      "rstrip": False, "normalized": True, "special": False},
                                                     {"id": 8, "content": "<e>", "normalized": False, "special": True}]})}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """One directory for all the examples of this module (each overwrites the same files)."""
    return tmp_path_factory.mktemp("fuzz")


@fuzz
@given(name=st.sampled_from(sorted(TOKENIZER_FILES)), data=st.data())
def test_tokenizer_directory_with_a_mutated_file(work, name, data):
    """from_pretrained on a directory where one file had random edits (or, for the JSON files,
    members replaced by any JSON value): a tokenizer, or an npbert error."""
    for file, text in TOKENIZER_FILES.items():
        (work / file).write_text(text, "utf-8")
    if name.endswith(".json") and data.draw(st.booleans()):
        changed = json.dumps(data.draw(json_mutated(json.loads(TOKENIZER_FILES[name])))).encode()
    else:
        changed = data.draw(mutated(TOKENIZER_FILES[name].encode()))
    (work / name).write_bytes(changed)
    result = outcome(BertTokenizer.from_pretrained, work)
    if isinstance(result, BertTokenizer):            # added tokens have ids; never_split words may have none
        assert all(t in result.get_vocab() or t in result.basic.never_split for t in result.tokenize("the thes"))


@pytest.mark.parametrize("name, text", [
    ("tokenizer.json", '{"model": true}'),                              # fixed: TypeError
    ("tokenizer.json", '{"model": "max_input_chars_per_word"}'),        # fixed: TypeError
    ("tokenizer.json", '{"model": 5}'),                                 # fixed: TypeError
    ("tokenizer.json", '{"model": ["max_input_chars_per_word"]}'),      # fixed: TypeError
    ("tokenizer_config.json", '{"do_lower_case": ' + "[" * 100_000),    # fixed: RecursionError
    ("tokenizer.json", "[" * 100_000),                                  # fixed: RecursionError
])
def test_tokenizer_files_of_the_wrong_shape(tmp_path, name, text):
    """tokenizer.json's "model" is read only if it is an object (HF's files always have one);
    JSON nested too deep is a DataError naming the file."""
    for file, content in TOKENIZER_FILES.items():
        (tmp_path / file).write_text(content, "utf-8")
    (tmp_path / name).write_text(text, "utf-8")
    result = outcome(BertTokenizer.from_pretrained, tmp_path)
    if name == "tokenizer.json" and text.startswith("{"):
        assert isinstance(result, BertTokenizer) and result.max_input_chars_per_word == 100   # from the config
    else:
        assert isinstance(result, DataError) and f"{tmp_path / name} is not valid JSON" in str(result)
