"""The pieces behind the linguistic measurements: attention-head statistics on hand-built
patterns, the linear probes on features a line separates, the built-in pairs, BLiMP's reader."""
import json

import numpy as np
import pytest

from npbert.data.builtin_vocab import builtin_vocab
from npbert.errors import DataError
from npbert.linguistics.attention_heads import (STATISTICS, TARGETS, HeadStatistics, broad_heads, named_heads,
                                                punctuation_ids)
from npbert.linguistics.builtin_pairs import PAIRS_PER_PARADIGM, PARADIGMS, builtin_pairs, write_jsonl
from npbert.linguistics.pairs import read_pairs
from npbert.linguistics.probes import LayerFeatures, probe_layers
from npbert.tokenizer import BertTokenizer

CLS, SEP, DOT = 2, 3, 7
COLUMN = {name: k for k, name in enumerate(STATISTICS)}


def pattern_stats(probs, ids, mask):
    """HeadStatistics of one layer's (B, A, T, T) pattern."""
    stats = HeadStatistics.empty(1, probs.shape[1])
    punctuation = np.zeros(10, bool)
    punctuation[DOT] = True
    stats.add(0, probs, ids, mask, CLS, SEP, punctuation)
    stats.count_queries(mask)
    return stats.mean()[0]                                                      # (A, 8)


def test_all_mass_on_the_previous_token_gives_exactly_one():
    """Head 0 puts every query's whole attention on the token before it ([CLS] on itself), head 1
    spreads it evenly; two sequences, one right-padded."""
    ids = np.array([[CLS, 5, 6, DOT, SEP], [CLS, 5, SEP, 0, 0]])
    mask = (ids != 0).astype(np.int64)
    probs = np.zeros((2, 2, 5, 5))
    for b, n in enumerate(mask.sum(1)):
        probs[b, 0, 0, 0] = 1.0
        for q in range(1, n):
            probs[b, 0, q, q - 1] = 1.0
        probs[b, 1, :n, :n] = 1.0 / n
    means = pattern_stats(probs, ids, mask)
    assert means[0, COLUMN["previous"]] == 1.0                                 # exactly
    assert means[0, COLUMN["next"]] == 0.0 and means[0, COLUMN["entropy"]] == 0.0
    assert means[0, COLUMN["self"]] == pytest.approx(2 / 8)                    # the two [CLS] queries of 8
    assert means[0, COLUMN["[CLS]"]] == pytest.approx(4 / 8)                   # [CLS] itself and the token after it
    assert means[0, COLUMN["[SEP]"]] == 0.0                                    # [SEP] is last: nothing follows it
    assert means[0, COLUMN["punctuation"]] == pytest.approx(1 / 8)             # the [SEP] after the '.'
    uniform = (5 * np.log(5) + 3 * np.log(3)) / 8
    assert means[1, COLUMN["entropy"]] == pytest.approx(uniform) and means[1, -1] == pytest.approx(uniform)
    assert means[1, COLUMN["previous"]] == pytest.approx((4 / 5 + 2 / 3) / 6)
    named, broad = named_heads(means[None]), broad_heads(means[None])
    assert [(layer, head) for layer, head, _ in named] == [(0, 0)] and "previous (1.00)" in named[0][2]
    assert broad == [(0, 1, f"entropy {uniform:.2f} of {uniform:.2f} nats")]   # uniform: no pattern, not a named head


@pytest.mark.parametrize("target", TARGETS)
def test_each_target_reaches_one_when_every_query_looks_only_at_it(target):
    """One sequence [CLS] a . b [SEP]: a pattern per target, all of each query's mass on it where the
    target exists for that query; its statistic is then exactly 1.0 (the queries that have one)."""
    ids = np.array([[CLS, 5, DOT, 6, SEP]])
    mask = np.ones_like(ids)
    where = {"[CLS]": lambda q: 0, "[SEP]": lambda q: 4, "punctuation": lambda q: 2, "self": lambda q: q,
             "previous": lambda q: q - 1 if q else None, "next": lambda q: q + 1 if q < 4 else None}[target]
    probs = np.zeros((1, 1, 5, 5))
    for q in range(5):
        probs[0, 0, q, q if where(q) is None else where(q)] = 1.0
    assert pattern_stats(probs, ids, mask)[0, COLUMN[target]] == 1.0


def test_punctuation_pieces():
    tokenizer = BertTokenizer(builtin_vocab())
    marks = [tokenizer.ids_to_tokens[i] for i in np.flatnonzero(punctuation_ids(tokenizer))]
    assert marks == ["'", ",", ".", "?"]


def test_a_probe_reads_what_one_layer_holds_and_not_what_another_hides():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 300)
    signal = np.eye(3)[labels] * 2 + rng.normal(0, 0.3, (300, 3))          # layer 1: the label, linearly
    noise = rng.normal(0, 1, (300, 3))                                       # layer 0: nothing
    split = [LayerFeatures([noise[s], signal[s]], labels[s]) for s in (slice(0, 200), slice(200, 250), slice(250, 300))]
    results = probe_layers(*split, num_classes=3)
    assert [r.layer for r in results] == [0, 1]
    assert results[1].dev_accuracy == 1.0 and results[1].test_accuracy == 1.0
    assert results[0].test_accuracy < 0.6


def test_builtin_pairs_are_fixed_within_the_vocabulary_and_of_equal_length():
    tokenizer = BertTokenizer(builtin_vocab())
    pairs = builtin_pairs()
    assert len(pairs) == len(PARADIGMS) * PAIRS_PER_PARADIGM and pairs == builtin_pairs()
    assert len({(p.good, p.bad) for p in pairs}) == len(pairs)
    for p in pairs:
        good, bad = tokenizer.tokenize(p.good), tokenizer.tokenize(p.bad)
        assert "[UNK]" not in good + bad and len(good) == len(bad) and good != bad, p
    assert pairs[0].paradigm == "determiner_noun_agreement" and pairs[0].where == "builtin:determiner_noun_agreement:1"


def test_builtin_pairs_written_as_blimp_read_back(tmp_path):
    files = write_jsonl(str(tmp_path))
    assert len(files) == len(PARADIGMS)
    first = json.loads(open(files[0]).readline())
    assert set(first) == {"sentence_good", "sentence_bad", "field", "linguistics_term", "UID", "pairID"}
    back = read_pairs(str(tmp_path))
    assert sorted((p.good, p.bad, p.paradigm) for p in back) == sorted((p.good, p.bad, p.paradigm)
                                                                         for p in builtin_pairs())


def test_blimp_reader_names_file_and_line(tmp_path):
    path = tmp_path / "x.jsonl"
    good = {"sentence_good": "a", "sentence_bad": "b", "field": "f", "linguistics_term": "t", "UID": "u",
            "pairID": 3, "one_prefix_method": True}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "pairID": True}) + "\n")
    with pytest.raises(DataError, match=r"x.jsonl:3: pairID must be a string or an integer"):
        read_pairs(str(path))
    path.write_bytes(json.dumps(good).encode() + b"\n\xff\n")
    with pytest.raises(DataError, match=r"x.jsonl:2: not UTF-8"):
        read_pairs(str(path))
    path.write_text(json.dumps(good) + "\n")
    assert read_pairs(str(path))[0].pair_id == "3"
