"""The tokenizer's options and additions beyond the call, held to transformers' Python BertTokenizer
and to tokenizers' added-token matching (the expected values written from their code and tests, each
test named for the transformers test it ports): never_split, do_basic_tokenize=False, add_tokens,
decode's spaces_between_special_tokens, and their files."""
import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npbert.errors import DataError, InputError
from npbert.tokenizer import BertTokenizer
from .test_api import BERT_TEST_VOCAB, bert_test_tokenizer, write


def test_basic_tokenizer_respects_never_split_tokens():
    """test_basic_tokenizer_respects_never_split_tokens, and never_split per call (BasicTokenizer.tokenize's
    argument, added to the tokenizer's) and in BertTokenizer (whose _tokenize keeps such a word whole)."""
    from npbert.tokenizer import BasicTokenizer
    text = " \tHeLLo!how  \n Are yoU? [UNK]"
    assert BasicTokenizer(do_lower_case=False, never_split=["[UNK]"]).tokenize(text) == \
        ["HeLLo", "!", "how", "Are", "yoU", "?", "[UNK]"]
    assert BasicTokenizer(do_lower_case=False).tokenize(text) == ["HeLLo", "!", "how", "Are", "yoU", "?", "[", "UNK", "]"]
    basic = BasicTokenizer(never_split=["[UNK]"])
    assert basic.tokenize(text, never_split=["yoU?"]) == ["hello", "!", "how", "are", "yoU?", "[UNK]"]
    assert basic.split("yoU?") == ["you", "?"]                         # the call's words were for that call
    tok = bert_test_tokenizer(never_split=["UNwanted", "[X]"])
    assert tok.tokenize("UNwanted unwanted UNwanted, [X] [X]!") == \
        ["UNwanted", "un", "##want", "##ed", "un", "##want", "##ed", ",", "[X]", "[UNK]", "[UNK]", "[UNK]", "[UNK]"]
    enc = tok("low\u200b[X]\u200b [MASK]UNwanted", return_offsets_mapping=True)   # a control character is no space
    assert enc.tokens() == ["[CLS]", "low", "[UNK]", "[UNK]", "[UNK]", "[MASK]", "[UNK]", "[SEP]"]
    assert enc["input_ids"] == [1, 13, 0, 0, 0, 4, 0, 2]               # a word not in the vocabulary: [UNK]'s id
    assert tok.tokenize_with_offsets("a \u200b[X]\u200b").offsets == [(0, 1), (3, 6)]
    # and as _run_split_on_punc and BertTokenizer._tokenize: a word in never_split once lower-cased is not cut at
    # punctuation, a piece of a word cut at punctuation that is in never_split is no WordPiece
    tok = bert_test_tokenizer(never_split=["[x]", "unwanted"])
    assert tok.tokenize("[X] unwanted, UNWANTED") == ["[x]", "unwanted", ",", "unwanted"]
    assert tok.encode("[X] unwanted,") == [1, 0, 0, 12, 2]
    for bad in ("[X]", 5, ["[X]", 5]):
        with pytest.raises(InputError, match="never_split must be a list of strings"):
            bert_test_tokenizer(never_split=bad)


_CASED = st.text(st.sampled_from("lowLOWéÉ.,!?'-[]x \t\n"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(text=_CASED, never_split=st.lists(st.sampled_from(["LOW", "low", "[x]", "lo-w", "É!", "lowx", "x"]), max_size=3))
def test_never_split_is_transformers_python_basic_tokenizer(text, never_split):
    """BasicTokenizer.tokenize as transformers' Python one does it: split on whitespace; a word not in
    never_split lower-cased and stripped of accents, then, if not in never_split so, cut at punctuation.
    BertTokenizer then cuts each word not in never_split into WordPiece tokens."""
    import re
    import unicodedata
    from npbert.tokenizer import BasicTokenizer, wordpiece
    expected = []
    for word in text.split():
        if word not in never_split:
            word = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if unicodedata.category(c) != "Mn")
        expected += [word] if word in never_split else re.findall(r"\w+|[^\w\s]", word)
    assert BasicTokenizer(never_split=never_split).tokenize(text) == expected
    tok = bert_test_tokenizer(never_split=never_split)
    assert tok.tokenize(text) == tok.tokenize_with_offsets(text).tokens == \
        [p for word in expected for p in ([word] if word in never_split else wordpiece(word, tok.vocab, 100, 9) or ["[UNK]"])]


def test_do_basic_tokenize_false_is_whitespace_and_wordpiece():
    """BertTokenizer(do_basic_tokenize=False): _tokenize is WordpieceTokenizer.tokenize alone (its test,
    test_wordpiece_tokenizer): words between whitespace, nothing lower-cased, stripped or split at
    punctuation; special tokens written in the text are still kept whole."""
    tok = bert_test_tokenizer(do_basic_tokenize=False)
    assert tok.tokenize("") == []
    assert tok.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert tok.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
    assert tok.tokenize("UNwant\u00e9d,running low,") == ["[UNK]", "[UNK]"]
    assert tok.tokenize("[MASK]unwanted\x1clow\u3000lowest") == ["[MASK]", "un", "##want", "##ed", "low", "lowest"]
    enc = tok(" low\xa0 lowest", return_offsets_mapping=True)
    assert enc["input_ids"] == [1, 13, 14, 2] and enc["offset_mapping"] == [(0, 0), (1, 4), (6, 12), (0, 0)]
    assert bert_test_tokenizer().tokenize("UNwant\u00e9d,running low,") == \
        ["un", "##want", "##ed", ",", "runn", "##ing", "low", ","]


def test_add_tokens_tokenizer():
    """test_add_tokens_tokenizer: the count, vocab_size unchanged, len() grown, the new ids after the
    vocabulary's, each token found whole (spaces and all) before WordPiece."""
    tok = bert_test_tokenizer()
    assert (tok.vocab_size, len(tok)) == (15, 15)
    assert tok.add_tokens(["aaaaa bbbbbb", "cccccccccdddddddd"]) == 2
    assert (tok.vocab_size, len(tok)) == (15, 17)
    assert tok.encode("aaaaa bbbbbb low cccccccccdddddddd l", add_special_tokens=False) == [15, 13, 16, 0]
    assert tok.get_vocab()["cccccccccdddddddd"] == 16 and tok.convert_ids_to_tokens([15, 16, 13]) == \
        ["aaaaa bbbbbb", "cccccccccdddddddd", "low"]
    assert tok.add_tokens([]) == 0 and tok.add_tokens("aaaaa bbbbbb") == 0 and len(tok) == 17
    # tokenizers counts a token the vocabulary has, which keeps its id; from then on it is found whole
    assert tok.add_tokens(["low", "low"]) == 1 and len(tok) == 17
    assert tok.tokenize("lowest flowers") == ["low", "[UNK]", "[UNK]", "low", "[UNK]"]   # no WordPiece of est, f, ers
    assert tok.convert_tokens_to_ids("low") == 13


def test_added_tokens_do_lower_case():
    """test_added_tokens_do_lower_case: an uncased tokenizer finds an added token in any case. As
    transformers 5 (Rust): a token keeps the case it was added with, so all four are added, and
    "AAAAA BBBBBB" in a text is the first added that normalizes to its "aaaaa bbbbbb" (id 15)."""
    tok = bert_test_tokenizer()
    text = "[UNK] aaaaa bbbbbb low cccccccccdddddddd l [UNK]"
    text2 = "[UNK] AAAAA BBBBBB low CCCCCCCCCDDDDDDDD l [UNK]"
    before = tok.tokenize(text)
    assert tok.add_tokens(["aaaaa bbbbbb", "cccccccccdddddddd", "AAAAA BBBBBB", "CCCCCCCCCDDDDDDDD"]) == 4
    assert tok.tokenize(text) == tok.tokenize(text2) == \
        ["[UNK]", "aaaaa bbbbbb", "low", "cccccccccdddddddd", "[UNK]", "[UNK]"]
    assert len(before) == 7 and tok.encode(text2, add_special_tokens=False) == [0, 15, 13, 16, 0, 0]
    assert tok.convert_tokens_to_ids(["AAAAA BBBBBB", "aaaaa bbbbbb"]) == [17, 15]
    cased = bert_test_tokenizer(do_lower_case=False)
    cased.add_tokens(["aaaaa"])
    assert cased.tokenize("aaaaa AAAAA") == ["aaaaa", "[UNK]"]


def test_added_tokens_are_matched_longest_first_anywhere():
    """test_added_token_are_matched_longest_first (either order of adding), and inside words: an added
    token is no word of its own (single_word=False, tokenizers' default), but what is left around it is."""
    for first, second in (("extra_id_1", "extra_id_100"), ("extra_id_100", "extra_id_1")):
        tok = bert_test_tokenizer()
        tok.add_tokens([first])
        tok.add_tokens([second])
        assert tok.tokenize("This is some extra_id_100") == ["[UNK]", "[UNK]", "[UNK]", "extra_id_100"]
    tok = bert_test_tokenizer()
    tok.add_tokens(["want"])
    enc = tok("UNWANTED lowwant", return_offsets_mapping=True)
    assert enc.tokens() == ["[CLS]", "un", "want", "[UNK]", "low", "want", "[SEP]"]   # "ed" alone is no word
    assert enc["offset_mapping"] == [(0, 0), (0, 2), (2, 6), (6, 8), (9, 12), (12, 16), (0, 0)]
    assert enc.word_ids() == [None, 0, 1, 2, 3, 4, None] and enc.char_to_token(13) == 5


def test_added_special_tokens_are_found_as_written():
    """add_tokens(special_tokens=True): found in the text as written, before normalization (as [MASK]),
    skipped by decode(skip_special_tokens=True) (tokenizers' decoder skips every special token), but as
    transformers 5's BertTokenizer, not one of all_special_tokens (its add_tokens does not list them)."""
    tok = bert_test_tokenizer()
    assert tok.add_tokens(["<ent>", "[MASK]"], special_tokens=True) == 1    # [MASK] was special already
    ids = tok.encode("<ent>low<ENT> [mask]", return_special_tokens_mask=False)
    assert ids == [1, 15, 13, 0, 0, 0, 0, 0, 0, 2]
    assert tok.decode(ids) == "[CLS] <ent> low [UNK] [UNK] [UNK] [UNK] [UNK] [UNK] [SEP]"
    assert tok.decode(ids, skip_special_tokens=True) == "low"
    assert tok.convert_ids_to_tokens(ids[:3], skip_special_tokens=True) == ["<ent>", "low"]
    assert tok.all_special_tokens == ["[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"]
    assert tok.all_special_ids == [0, 2, 3, 1, 4]
    assert tok("<ent>", return_special_tokens_mask=True)["special_tokens_mask"] == [1, 0, 1]


def test_encode_decode_with_spaces():
    """test_encode_decode_with_spaces (a cased tokenizer): spaces_between_special_tokens=False joins the
    tokens added with add_tokens to their neighbours, as transformers' Python tokenizer decodes; True
    (the default) is the decoder of transformers 5, which has no such option."""
    tok = bert_test_tokenizer(do_lower_case=False)
    tok.add_tokens(["[ABC]", "[DEF]", "GHI IHG"])
    tok.add_tokens(["[SAMPLE]"], special_tokens=True)
    text = "[ABC][DEF][ABC]GHI IHG[DEF]"
    ids = tok.encode(text, add_special_tokens=False)
    assert ids == [15, 16, 15, 17, 16]
    assert tok.decode(ids) == "[ABC] [DEF] [ABC] GHI IHG [DEF]"
    assert tok.decode(ids, spaces_between_special_tokens=False) == text
    ids = tok.encode("low [ABC] lowest, [SAMPLE]unwanted")
    assert tok.decode(ids, spaces_between_special_tokens=False) == "[CLS] low[ABC]lowest,[SAMPLE]unwanted [SEP]"
    assert tok.batch_decode([ids[:4]], spaces_between_special_tokens=False) == ["[CLS] low[ABC]lowest"]
    plain = bert_test_tokenizer()                       # no added tokens: no difference
    ids = plain.encode("low, lowest unwanted")
    assert plain.decode(ids, spaces_between_special_tokens=False) == plain.decode(ids) == \
        "[CLS] low, lowest unwanted [SEP]"


@settings(max_examples=150, deadline=None)
@given(word=st.text(st.sampled_from("abcdefgh"), min_size=2, max_size=6), data=st.data())
def test_an_added_token_is_one_token_in_any_case(word, data):
    tok = bert_test_tokenizer()
    assert tok.add_tokens(word.upper()) == 1
    cased = "".join(c.upper() if data.draw(st.booleans()) else c for c in word)
    around = data.draw(st.sampled_from(["{} ", " {}, low", "low {}.", "[MASK]{}[SEP]", "{}{}"]))
    text = around.format(cased, cased)
    enc = tok(text, return_offsets_mapping=True)
    added = [i for i, t in enumerate(enc["input_ids"]) if t == 15]
    assert len(added) == text.count(cased) and enc.tokens()[added[0]] == word.upper()
    assert all(text[slice(*enc["offset_mapping"][i])] == cased for i in added)
    assert len(tok) == 16 and tok.decode(enc["input_ids"], skip_special_tokens=True).count(word.upper()) == len(added)


def test_bad_added_tokens_get_one_clear_error():
    tok = bert_test_tokenizer()
    for bad, message in ((5, "takes a str or a list of them, got int"), ([b"x"], "takes strings, got a bytes"),
                         ([""], "cannot add ''"), (["low", " \t"], "needs a character that is not whitespace"),
                         (["\u200b"], "or a control character"), (None, "got NoneType")):
        with pytest.raises(InputError, match=message):
            tok.add_tokens(bad)
    assert len(tok) == 15 and tok.tokenize("low") == ["low"]          # nothing of a refused list was added
    assert tok.add_tokens(["\u200b"], special_tokens=True) == 1       # as written: a zero-width space


def test_ids_of_added_tokens_are_refused_by_a_model_until_it_grows():
    """npbert has no resize_token_embeddings: a model whose vocab_size the added ids exceed says so."""
    from npbert.config import BertConfig
    from npbert.model_inputs import check_inputs
    tok = bert_test_tokenizer()
    tok.add_tokens(["newword"])
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=8)
    with pytest.raises(InputError, match=r"input_ids\[0, 2\] = 15 is outside \[0, 15\) \(vocab_size = 15\)"):
        check_inputs(config, tok(["low newword"], return_tensors="np")["input_ids"])
    check_inputs(BertConfig(vocab_size=len(tok), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=8), tok(["low newword"], return_tensors="np")["input_ids"])


def test_added_tokens_and_python_options_are_saved_and_read(tmp_path):
    """tokenizer.json's added_tokens as tokenizers writes them (after BERT's five, by id; normalized = not
    special); never_split and do_basic_tokenize in tokenizer_config.json, as transformers 4 keeps them."""
    tok = bert_test_tokenizer(never_split=["[X]"], do_basic_tokenize=False)
    tok.add_tokens(["NewTok", "low"])
    tok.add_tokens(["<ent>"], special_tokens=True)
    tok.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert [(e["id"], e["content"], e["normalized"], e["special"]) for e in saved["added_tokens"]] == \
        [(0, "[UNK]", False, True), (1, "[CLS]", False, True), (2, "[SEP]", False, True), (3, "[PAD]", False, True),
         (4, "[MASK]", False, True), (13, "low", True, False), (15, "NewTok", True, False), (16, "<ent>", False, True)]
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert (config["never_split"], config["do_basic_tokenize"]) == (["[X]"], False)
    assert (tmp_path / "vocab.txt").read_text(encoding="utf-8").split() == BERT_TEST_VOCAB
    back = BertTokenizer.from_pretrained(tmp_path)
    text = "NEWTOK lowest<ent> [X] UNwanted"
    assert back.encode(text) == tok.encode(text) == [1, 0, 13, 0, 16, 0, 0, 2]   # cased, whitespace words only
    assert len(back) == 17 and back.basic.never_split == {"[X]"} and not back.do_basic_tokenize
    plain = bert_test_tokenizer()
    plain.save_pretrained(tmp_path / "plain")
    config = json.loads((tmp_path / "plain" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert "never_split" not in config and "do_basic_tokenize" not in config


@pytest.mark.parametrize("entry, message", [
    ({"id": 16, "content": "x", "special": False}, "id 16, but .* it gets 15"),
    ({"id": 15, "content": "x", "special": False, "lstrip": True}, "matched in a way npbert does not"),
    ({"id": 15, "content": "x", "special": True, "normalized": True}, "matched in a way npbert does not"),
    ({"id": 15, "content": "", "special": True}, "added tokens: cannot add ''"),
    ({"id": "15", "content": "x"}, "integer id, a string content"),
])
def test_added_tokens_in_a_tokenizer_json_npbert_cannot_read(tmp_path, entry, message):
    write(tmp_path, {"vocab.txt": "\n".join(BERT_TEST_VOCAB) + "\n",
                     "tokenizer.json": json.dumps({"added_tokens": [{"id": 0, "content": "[UNK]", "special": True},
                                                                    entry]})})
    with pytest.raises(DataError, match=message):
        BertTokenizer.from_pretrained(tmp_path)


def test_a_model_grown_for_added_tokens_is_saved_and_loaded_with_its_tokenizer(tmp_path):
    """vocab_size = len(tokenizer): the vocabulary's tokens and the ones tokenizer.json adds after them."""
    from npbert.checkpoint import CheckpointError, load_pretrained, save_pretrained
    from npbert.config import BertConfig
    from npbert.model_params import init_params
    tok = bert_test_tokenizer()
    tok.add_tokens(["newword", "low"])                             # "low" is in the vocabulary: no new id
    config = BertConfig(vocab_size=len(tok), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=8)
    params = init_params(config, np.random.default_rng(0))
    save_pretrained(tmp_path / "grown", config, params, tok)
    loaded, back = load_pretrained(tmp_path / "grown"), BertTokenizer.from_pretrained(tmp_path / "grown")
    assert loaded.config.vocab_size == len(back) == len(BERT_TEST_VOCAB) + 1
    assert back.encode("low newword") == tok.encode("low newword")
    with pytest.raises(CheckpointError, match=f"the tokenizer has {len(tok)} tokens but .* vocab_size = {len(tok) - 1}"):
        short = dataclasses.replace(config, vocab_size=len(tok) - 1)         # a model not grown
        save_pretrained(tmp_path / "short", short, init_params(short, np.random.default_rng(0)), tok)
    tok.add_tokens(["another"])                                    # the files now add 2, the model has rows for 1
    tok.save_pretrained(tmp_path / "grown")
    with pytest.raises(CheckpointError, match=r"vocab.txt with the 2 tokenizer.json adds has 17 tokens"):
        load_pretrained(tmp_path / "grown")
