"""Each metric against values computed by hand, and its edge cases."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npbert.metrics import (accuracy, average_ranks, entities, entity_scores, f1, macro_f1, matthews_corrcoef,
                            normalize_answer, pearson, spearman, squad_exact, squad_f1, squad_scores)


def test_accuracy_and_f1():
    y, p = [1, 0, 1, 1, 0, 0], [1, 1, 0, 1, 0, 0]
    assert accuracy(y, p) == 4 / 6
    # positive class 1: tp 2, fp 1, fn 1 -> F1 = 4 / 6
    assert f1(y, p) == pytest.approx(2 / 3)
    # class 0: tp 2, fp 1, fn 1 -> 2/3 as well; macro = 2/3
    assert macro_f1(y, p) == pytest.approx(2 / 3)
    assert macro_f1([0, 1, 2], [0, 1, 1]) == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert f1([0, 0], [0, 0]) == 0.0 and accuracy([], []) == 0.0    # no positives: 0, as scikit-learn


def test_f1_of_a_named_positive_class():
    assert f1(["no", "yes", "yes"], ["yes", "yes", "no"], positive="yes") == pytest.approx(0.5)


def test_matthews_corrcoef():
    y, p = [1, 1, 1, 0, 0, 0, 0, 1], [1, 1, 0, 0, 0, 1, 0, 1]
    tp, tn, fp, fn = 3, 3, 1, 1
    expected = (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert matthews_corrcoef(y, p) == pytest.approx(expected)
    assert matthews_corrcoef([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)
    assert matthews_corrcoef([0, 1, 1], [1, 1, 1]) == 0.0               # constant prediction: 0, not NaN
    # three classes, by hand from the confusion matrix [[2,0,0],[0,1,1],[0,0,1]] (sklearn's formula)
    y3, p3 = [0, 0, 1, 1, 2], [0, 0, 1, 2, 2]
    t, q, c, n = np.array([2, 2, 1]), np.array([2, 1, 2]), 4, 5
    assert matthews_corrcoef(y3, p3) == pytest.approx((c * n - t @ q) / np.sqrt((n * n - q @ q) * (n * n - t @ t)))


def test_pearson_and_spearman_with_ties():
    x, y = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.5]
    xm, ym = np.array(x) - 2.5, np.array(y) - 5.125
    assert pearson(x, y) == pytest.approx((xm @ ym) / np.sqrt((xm @ xm) * (ym @ ym)))
    assert spearman(x, y) == pytest.approx(1.0)
    assert list(average_ranks([10, 20, 20, 5, 20])) == [2, 4, 4, 1, 4]
    assert list(average_ranks([3, 3])) == [1.5, 1.5]
    # ranks x: 1, 2.5, 2.5, 4; y: 1, 2, 3, 4 -> Pearson of the ranks
    rx, ry = np.array([1, 2.5, 2.5, 4]) - 2.5, np.array([1, 2, 3, 4]) - 2.5
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx((rx @ ry) / np.sqrt((rx @ rx) * (ry @ ry)))
    assert pearson([1, 1, 1], [1, 2, 3]) == 0.0                        # constant input: 0, not NaN
    # NaN propagates as in scipy (spearmanr, rankdata nan_policy="propagate"), like pearson's
    assert np.isnan(pearson([1, 2, np.nan], [1, 2, 3]))
    assert np.isnan(spearman([1, 2, np.nan], [1, 2, 3])) and np.isnan(spearman([1, 2, 3], [np.nan, 2, 3]))
    assert np.isnan(average_ranks([2, np.nan, 1])).all()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=12))
def test_average_ranks_sum_and_order(values):
    r = average_ranks(values)
    n = len(values)
    assert r.sum() == pytest.approx(n * (n + 1) / 2)
    for i in range(n):
        for j in range(n):
            assert (values[i] < values[j]) == (r[i] < r[j])


def test_entities_follow_conlleval():
    tags = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-ORG", "I-ORG", "O", "I-PER"]
    assert entities(tags) == {("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 5), ("ORG", 5, 7), ("PER", 8, 9)}
    assert entities(["I-PER", "I-LOC", "I-LOC"]) == {("PER", 0, 1), ("LOC", 1, 3)}   # IOB1 chunks
    assert entities(["O", "O"]) == set() and entities([]) == set()
    # tags without a type are chunks of the empty type, as conlleval.pl splits /^([^-]*)-(.*)$/
    assert entities(["O", "O", "O", "B", "I", "I", "O"]) == {("", 3, 6)}
    assert entities(["I", "B", "I-X", "B-A-B"]) == {("", 0, 1), ("", 1, 2), ("X", 2, 3), ("A-B", 3, 4)}
    assert entity_scores([["O", "B", "I", "O"]], [["O", "B", "I", "O"]])["f1"] == 1.0


def test_entity_scores_need_exact_spans_and_types():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    pred = [["B-PER", "O", "O", "B-LOC"], ["B-ORG", "O"]]      # PER cut short: wrong span
    s = entity_scores(gold, pred)
    # gold 3 entities, predicted 3 (PER 0-1, LOC, ORG), 2 right
    assert (s["precision"], s["recall"]) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert s["f1"] == pytest.approx(2 / 3) and s["token_accuracy"] == pytest.approx(5 / 6)
    assert entity_scores([["O"]], [["O"]])["f1"] == 0.0
    with pytest.raises(ValueError):
        entity_scores([["O", "O"]], [["O"]])


def test_squad_normalisation_and_scores():
    assert normalize_answer("The  Quick, brown FOX!") == "quick brown fox"
    assert normalize_answer("an apple a day") == "apple day"
    assert normalize_answer("theatre") == "theatre"                       # articles only as whole words
    assert squad_exact("the Eiffel Tower.", "Eiffel tower") == 1.0
    # "big red dog" vs "red dog barked": common {red, dog} -> P 2/3, R 2/3, F1 2/3
    assert squad_f1("big red dog", "red dog barked") == pytest.approx(2 / 3)
    assert squad_f1("a", "the") == 0.0 and squad_f1("", "x") == 0.0
    s = squad_scores(["Denver Broncos", "1990", "Paris"],
                     [["Denver Broncos", "Broncos"], ["in 1990s", "1991"], ["Rome"]])
    assert s["exact_match"] == pytest.approx(1 / 3)
    assert s["f1"] == pytest.approx((1 + 0 + 0) / 3)
    assert squad_scores(["red dog"], [["dog", "big red dog"]])["f1"] == pytest.approx(0.8)  # best gold: P 1, R 2/3
