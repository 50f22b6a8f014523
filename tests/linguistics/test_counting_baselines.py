"""The counting baselines (npbert/linguistics/counting.py) on a corpus counted by hand: the three
sentences "a b", "a c", "b c" over the pieces a=0 b=1 c=2 d=3 e=4 (V = 5; </s> makes 6 symbols)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npbert.linguistics.counting import KneserNeyModel, UnigramModel, max_order

A, B, C, D = 0, 1, 2, 3
CORPUS = [[A, B], [A, C], [B, C]]
V = 5

# Kneser-Ney with D = 0.75, counted by hand (the derivation is in docs/linguistics.md's example):
# unigram level, continuation counts a: 1 (after <s>), b: 2 (after a, <s>), c: 2 (a, b), </s>: 2 (b, c);
# A = 7, 4 types: P1(w) = max(a(w) - .75, 0) / 7 + .75 * 4 / 7 / 6
P1 = {A: 0.75 / 7, B: 1.75 / 7, C: 1.75 / 7, D: 0.5 / 7, "eos": 1.75 / 7}
# bigram level: after <s>: a 2, b 1 (raw: they start with <s>); after a: b 1, c 1; after b: </s> 1, c 1
P2_a_bos = 1.25 / 3 + 0.75 * 2 / 3 * P1[A]
P2_b_a = 0.25 / 2 + 0.75 * P1[B]
P2_eos_b = 0.25 / 2 + 0.75 * P1["eos"]
P2_eos_a = 0.75 * P1["eos"]                          # a is never followed by </s>


def test_unigram_is_add_one_over_the_vocabulary():
    model = UnigramModel(CORPUS, V)                   # counts a 2, b 2, c 2, d 0, e 0; N = 6
    assert model.sentence_log_prob([A, B]) == pytest.approx(2 * math.log(3 / 11), abs=1e-12)
    assert model.sentence_log_prob([D, A]) == pytest.approx(math.log(1 / 11) + math.log(3 / 11), abs=1e-12)
    assert model.sentence_log_prob([B, A]) == model.sentence_log_prob([A, B])   # order-blind: a tie


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(2, 60))
def test_unigram_scores_every_order_of_the_same_pieces_the_same(seed, length):
    """The unigram is blind to order, so its score must be too, to the last bit: a pair whose
    sentences are two orders of the same pieces is a tie, and a tie counts wrong. (Summed in
    sentence order, a real corpus's unigram scored 8.9 % on such BLiMP pairs, by rounding.)"""
    rng = np.random.default_rng(seed)
    corpus = [rng.zipf(1.3, size=rng.integers(1, 30)) % 500 for _ in range(200)]   # frequencies of every size
    model = UnigramModel(corpus, 500)
    sentence = rng.integers(0, 500, size=length)
    scores = {model.sentence_log_prob(rng.permutation(sentence)) for _ in range(8)}
    assert scores == {model.sentence_log_prob(sentence)}


def test_bigram_kneser_ney_by_hand():
    model = KneserNeyModel(CORPUS, V, order=2)
    want = math.log(P2_a_bos) + math.log(P2_b_a) + math.log(P2_eos_b)
    assert model.sentence_log_prob([A, B]) == pytest.approx(want, abs=1e-12)


def test_trigram_kneser_ney_by_hand():
    model = KneserNeyModel(CORPUS, V, order=3)
    p_a = 1.25 / 3 + 0.75 * 2 / 3 * P2_a_bos          # after <s> <s>: a 2, b 1
    p_b = 0.25 / 2 + 0.75 * 2 / 2 * P2_b_a            # after <s> a: b 1, c 1
    p_eos = 0.25 / 1 + 0.75 * 1 / 1 * P2_eos_b        # after a b: </s> 1
    assert model.sentence_log_prob([A, B]) == pytest.approx(math.log(p_a) + math.log(p_b) + math.log(p_eos), abs=1e-12)
    # unseen piece and contexts: d after <s> <s>; a after <s> d (never seen: to a's unigram level);
    # </s> after d a (never seen: the bigram level after a, where </s> was never seen either)
    p_d = 0.5 * (0.5 * P1[D])
    assert model.sentence_log_prob([D, A]) == pytest.approx(math.log(p_d) + math.log(P1[A]) + math.log(P2_eos_a),
                                                            abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 1000), order=st.integers(1, 4), context=st.lists(st.integers(0, 7), max_size=3))
def test_kneser_ney_is_a_distribution_in_every_context(seed, order, context):
    rng = np.random.default_rng(seed)
    vocab = 7
    corpus = [list(rng.integers(0, vocab, rng.integers(1, 6))) for _ in range(int(rng.integers(1, 12)))]
    model = KneserNeyModel(corpus, vocab, order)
    h = [model.bos if c == vocab else c for c in context][:order - 1]          # 7 stands for <s>
    h = [model.bos] * (order - 1 - len(h)) + h                                   # (order - 1,) pieces
    total = sum(model.prob((*h, w)) for w in [*range(vocab), model.eos])
    assert total == pytest.approx(1.0, abs=1e-12)


def test_the_order_must_fit_the_keys():
    assert max_order(8192) == 4 and max_order(30522) == 4
    with pytest.raises(ValueError, match="order must be in 1..4"):
        KneserNeyModel(CORPUS, 8192, order=5)
