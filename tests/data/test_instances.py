"""Pretraining instances: NSP pairs and masking, as google-research/bert's create_pretraining_data.py;
single sentences, as BabyBERTa's."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npbert.data.instances import (IS_NEXT, NOT_NEXT, InstanceOptions, VocabIds, canonical_mask_mix, create_instances,
                                   create_instances_from_document, create_masked_lm_predictions, num_to_predict,
                                   truncate_seq_pair)
from npbert.errors import DataError

# Special tokens at unusual ids (as in the real BERT vocab, where [CLS] is 101): nothing may assume 0-4.
WORDS = [f"w{i}" for i in range(60)]
TOKENS = WORDS + ["[UNK]", "[PAD]", "[MASK]", "[SEP]", "[CLS]", "##a", "##b"]
VOCAB = VocabIds.from_tokens(TOKENS)
CLS, SEP, MASK = VOCAB.cls_id, VOCAB.sep_id, VOCAB.mask_id
HASH_A, HASH_B = TOKENS.index("##a"), TOKENS.index("##b")


def random_documents(rng, num_documents=30, sentences=(4, 14), words=(3, 14)):
    """Documents of sentences of word ids (never specials)."""
    return [[list(rng.integers(0, len(WORDS), size=int(rng.integers(*words))))
             for _ in range(int(rng.integers(*sentences)))] for _ in range(num_documents)]


def unmasked(inst):
    """-> (A, B) with the masked positions restored to their labels."""
    tokens = list(inst.tokens)
    for p, label in zip(inst.masked_lm_positions, inst.masked_lm_labels):
        tokens[p] = label
    return tokens[1:inst.num_a + 1], tokens[inst.num_a + 2:-1]


def test_vocab_ids_found_by_name_not_position():
    assert (VOCAB.pad_id, VOCAB.unk_id, VOCAB.cls_id, VOCAB.sep_id, VOCAB.mask_id) == (61, 60, 64, 63, 62)
    assert VOCAB.continuation_ids == {HASH_A, HASH_B}
    assert VOCAB.vocab_size == len(TOKENS)


@pytest.mark.parametrize("missing", ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"])
def test_vocab_without_a_special_token_is_a_data_error(missing):
    with pytest.raises(DataError, match=r"lacks the special token\(s\) \[" + missing[1:-1]):
        VocabIds.from_tokens([t for t in TOKENS if t != missing], source="my vocab")


@pytest.mark.parametrize("n, expected", [(5, 1), (10, 2), (20, 3), (64, 10), (128, 19), (200, 20), (512, 20)])
def test_num_to_predict_formula(n, expected):
    # min(max_predictions_per_seq, max(1, round(n * masked_lm_prob))) with n counting [CLS]/[SEP]
    assert num_to_predict(n, InstanceOptions(max_predictions_per_seq=20)) == expected


def test_masking_never_touches_cls_sep_and_labels_are_the_originals():
    tokens = [CLS] + list(range(10)) + [SEP] + list(range(20, 35)) + [SEP]
    options = InstanceOptions(max_predictions_per_seq=20)
    for seed in range(200):
        masked, positions, labels = create_masked_lm_predictions(tokens, VOCAB, options, np.random.default_rng(seed))
        assert len(positions) == num_to_predict(len(tokens), options) == 4
        assert positions == sorted(set(positions))
        assert labels == [tokens[p] for p in positions]
        for p in (0, 11, len(tokens) - 1):
            assert p not in positions and masked[p] == tokens[p]
        unmasked = [i for i in range(len(tokens)) if i not in positions]
        assert [masked[i] for i in unmasked] == [tokens[i] for i in unmasked]


def test_a_short_sequence_still_predicts_one_token():
    tokens = [CLS, 7, SEP, 8, SEP]
    _, positions, labels = create_masked_lm_predictions(tokens, VOCAB, InstanceOptions(), np.random.default_rng(0))
    assert len(positions) == 1 and positions[0] in (1, 3) and labels == [tokens[positions[0]]]


def test_whole_word_masking_masks_every_piece_of_a_word():
    # words: 1 ##a ##b | 2 | 3 ##a | 4 ...: a chosen word is predicted whole, never a lone piece
    tokens = [CLS, 1, HASH_A, HASH_B, 2, 3, HASH_A, 4, 5, SEP, 6, HASH_B, 7, 8, 9, 10, 11, 12, 13, SEP]
    options = InstanceOptions(whole_word_mask=True)
    seen_piece = False
    for seed in range(300):
        _, positions, _ = create_masked_lm_predictions(tokens, VOCAB, options, np.random.default_rng(seed))
        chosen = set(positions)
        assert len(chosen) <= num_to_predict(len(tokens), options)
        for word in ([1, 2, 3], [5, 6], [10, 11]):
            assert chosen.isdisjoint(word) or chosen.issuperset(word)
        seen_piece |= 2 in chosen
    assert seen_piece


def test_without_whole_word_masking_pieces_are_masked_alone():
    tokens = [CLS, 1, HASH_A, HASH_B, 2, SEP, 3, HASH_A, SEP]
    alone = False
    for seed in range(300):
        _, positions, _ = create_masked_lm_predictions(tokens, VOCAB, InstanceOptions(), np.random.default_rng(seed))
        alone |= positions in ([2], [3], [7])
    assert alone


def test_truncate_seq_pair_shortens_the_longer_side_from_both_ends():
    fronts = backs = 0
    for seed in range(100):
        a, b = list(range(10)), list(range(100, 103))
        truncate_seq_pair(a, b, 8, np.random.default_rng(seed))
        assert b == [100, 101, 102] and len(a) == 5
        assert a == list(range(a[0], a[0] + 5))          # a contiguous run: only the ends were cut
        fronts += a[0] > 0
        backs += a[-1] < 9
    assert fronts > 10 and backs > 10


def test_instances_have_the_original_shape():
    rng = np.random.default_rng(0)
    documents = random_documents(rng)
    options = InstanceOptions(max_seq_length=40, max_predictions_per_seq=6)
    instances = create_instances(documents, range(len(documents)), VOCAB, options, rng)
    assert instances
    for inst in instances:
        tokens = inst.tokens
        assert len(tokens) <= 40 and tokens[0] == CLS and tokens[inst.num_a + 1] == SEP and tokens[-1] == SEP
        a, b = unmasked(inst)
        assert len(a) >= 1 and len(b) >= 1 and CLS not in a + b and SEP not in a + b
        assert len(inst.masked_lm_positions) == num_to_predict(len(tokens), options)
        assert inst.next_sentence_label in (IS_NEXT, NOT_NEXT)


def test_is_next_b_continues_a_and_not_next_b_comes_from_another_document():
    # every token identifies its document and sentence, so provenance can be checked exactly
    documents = [[[1000 * d + 10 * s + k for k in range(4)] for s in range(8)] for d in range(6)]
    vocab = VocabIds.from_tokens([str(i) for i in range(6000)] + ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    options = InstanceOptions(max_seq_length=30, short_seq_prob=0.0)
    for seed in range(20):
        for d in range(6):
            for inst in create_instances_from_document(documents, d, vocab, options, np.random.default_rng(seed)):
                a, b = unmasked(inst)
                assert {t // 1000 for t in a} == {d}
                if inst.next_sentence_label == IS_NEXT:
                    assert {t // 1000 for t in b} == {d}
                    # B starts with the sentence right after A's last (unless truncated at B's front)
                    assert (b[0] % 1000) // 10 >= (a[-1] % 1000) // 10
                else:
                    assert d not in {t // 1000 for t in b}


def test_short_seq_prob_gives_short_targets():
    rng = np.random.default_rng(0)
    documents = random_documents(rng, num_documents=20, sentences=(20, 30), words=(2, 4))
    long_only = create_instances(documents, range(20), VOCAB, InstanceOptions(max_seq_length=64, short_seq_prob=0), rng)
    always_short = create_instances(documents, range(20), VOCAB, InstanceOptions(max_seq_length=64, short_seq_prob=1), rng)
    assert np.mean([len(i.tokens) for i in always_short]) < np.mean([len(i.tokens) for i in long_only]) - 10


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), max_seq_length=st.integers(5, 24))
def test_sentence_instances_hold_every_sentence_once_a_pass_in_windows(seed, max_seq_length):
    """[CLS] sentence [SEP], one segment, no NSP to learn; a long sentence in consecutive windows
    of max_seq_length - 2, so the text is all there, once (a single document is enough)."""
    rng = np.random.default_rng(seed)
    documents = random_documents(rng, num_documents=int(rng.integers(1, 5)), words=(1, 40))
    options = InstanceOptions(max_seq_length=max_seq_length, max_predictions_per_seq=3, kind="sentences")
    instances = create_instances(documents, range(len(documents)), VOCAB, options, rng)
    width = max_seq_length - 2
    want = sorted(s[i:i + width] for d in documents for s in d for i in range(0, len(s), width))
    got = []
    for inst in instances:
        assert inst.tokens[0] == CLS and inst.tokens[-1] == SEP and inst.num_a == len(inst.tokens) - 2
        assert inst.next_sentence_label == IS_NEXT
        assert len(inst.masked_lm_positions) == num_to_predict(len(inst.tokens), options)
        a, b = unmasked(inst)
        assert b == [] and CLS not in a and SEP not in a
        got.append(a)
    assert sorted(got) == want


def test_a_single_document_is_a_data_error():
    with pytest.raises(DataError, match="at least 2 documents"):
        create_instances([[[1, 2, 3], [4, 5]]], [0], VOCAB, InstanceOptions(), np.random.default_rng(0))


@pytest.mark.parametrize("bad", [dict(max_seq_length=4), dict(masked_lm_prob=0.0), dict(max_predictions_per_seq=0),
                                 dict(short_seq_prob=1.5), dict(kind="paragraphs")])
def test_bad_options_are_data_errors(bad):
    with pytest.raises(DataError):
        InstanceOptions(**bad)


@pytest.mark.parametrize("mix, message", [
    ("80/10", "three whole percentages MASK/SAME/RND"), ("80/10/10/0", "three whole percentages"),
    ("80.0/10/10", "three whole percentages"), ("-10/10/100", "three whole percentages"),
    ("a/b/c", "three whole percentages"), ("", "three whole percentages"), (None, "got None"),
    ((80, 10, 10), r"got \(80, 10, 10\)"), ("80/10/20", "80/10/20 sums to 110%, not 100%"),
    ("0/0/0", "sums to 0%")])
def test_a_bad_mask_mix_is_a_data_error_naming_it(mix, message):
    with pytest.raises(DataError, match="mask_mix.*" + message):
        InstanceOptions(mask_mix=mix)


def test_a_mask_mix_is_recorded_in_one_spelling():
    assert canonical_mask_mix(" 080/10/010") == "80/10/10" and canonical_mask_mix("0/0/100") == "0/0/100"


MIDDLE = [CLS] + list(range(30)) + [SEP] + list(range(30, 59)) + [SEP]   # 59 candidates, 9 chosen


def test_the_default_mix_is_the_original_80_10_10_to_the_bit():
    """The original's constants written out (u < 0.8: [MASK]; else v >= 0.5: random; else kept),
    replayed on the same Generator: the default mask mix changes no draw and no outcome."""
    for seed in range(300):
        masked, positions, _ = create_masked_lm_predictions(MIDDLE, VOCAB, InstanceOptions(), np.random.default_rng(seed))
        replay = np.random.default_rng(seed)
        replay.shuffle(list(range(59)))                 # the candidates' shuffle: same draws for any 59 items
        n = len(positions)
        action, keep_or_random, random_ids = replay.random(n), replay.random(n), replay.integers(VOCAB.vocab_size, size=n)
        expected = list(MIDDLE)
        for k, p in enumerate(positions):
            if action[k] < 0.8:
                expected[p] = MASK
            elif keep_or_random[k] >= 0.5:
                expected[p] = int(random_ids[k])
        assert masked == expected, seed


TABLE_8 = ["80/10/10", "100/0/0", "80/0/20", "80/20/0", "0/20/80", "0/0/100"]


@pytest.mark.parametrize("mix", TABLE_8)
def test_every_mix_chooses_the_same_positions_and_consumes_the_same_draws(mix):
    """Mixes differ only in what the chosen positions show: an ablation over them compares the
    same targets, and the Generator is left in the same state for what follows."""
    for seed in range(50):
        default_rng, mix_rng = np.random.default_rng(seed), np.random.default_rng(seed)
        _, positions, labels = create_masked_lm_predictions(MIDDLE, VOCAB, InstanceOptions(), default_rng)
        _, mix_positions, mix_labels = create_masked_lm_predictions(MIDDLE, VOCAB, InstanceOptions(mask_mix=mix), mix_rng)
        assert (positions, labels) == (mix_positions, mix_labels)
        assert default_rng.random() == mix_rng.random()


@pytest.mark.parametrize("mix", TABLE_8)
def test_realised_mix_matches_the_asked_one(mix):
    """Shares of the chosen positions shown as [MASK] / themselves / another token. A random
    replacement is uniform over the whole vocabulary, so with probability 1/V each it draws the
    original id (shows as kept) or [MASK] itself (as the original does): a zero share is exactly
    zero, the others within 4 standard errors of their expectation."""
    mask, same, rnd = (int(x) / 100 for x in mix.split("/"))
    rng = np.random.default_rng(11)
    instances = create_instances(random_documents(rng, num_documents=100, sentences=(20, 40)), range(100), VOCAB,
                                 InstanceOptions(max_seq_length=64, mask_mix=mix), rng)
    shown = np.array([(i.tokens[p], label) for i in instances for p, label in zip(i.masked_lm_positions,
                                                                                   i.masked_lm_labels)])
    n = len(shown)
    as_mask = np.mean(shown[:, 0] == MASK)
    kept = np.mean(shown[:, 0] == shown[:, 1])
    other = np.mean((shown[:, 0] != MASK) & (shown[:, 0] != shown[:, 1]))
    V = VOCAB.vocab_size
    expected = dict(as_mask=mask + rnd / V, kept=same + rnd / V, other=rnd * (1 - 2 / V))
    assert n > 2000
    for name, got in (("as_mask", as_mask), ("kept", kept), ("other", other)):
        p = expected[name]
        if p == 0:
            assert got == 0, name
        else:
            assert abs(got - p) < 4 * np.sqrt(p * (1 - p) / n) + 1e-12, (name, got, p)


def test_same_seed_same_instances_other_seed_other_instances():
    documents = random_documents(np.random.default_rng(1))
    make = lambda seed: create_instances(documents, range(len(documents)), VOCAB, InstanceOptions(max_seq_length=32),
                                         np.random.default_rng(seed))
    assert make(5) == make(5)
    assert make(5) != make(6)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), whole_word_mask=st.booleans())
def test_realised_rates_match_the_algorithm(seed, whole_word_mask):
    rng = np.random.default_rng(seed)
    documents = random_documents(rng, num_documents=150, sentences=(20, 40), words=(3, 10))
    if whole_word_mask:   # sprinkle ## pieces after words
        documents = [[[HASH_A if k and rng.random() < 0.2 else t for k, t in enumerate(s)] for s in d]
                     for d in documents]
    # short_seq_prob=0: a short target makes single-sentence chunks, always NotNext (see docs/data.md)
    options = InstanceOptions(max_seq_length=64, max_predictions_per_seq=20, short_seq_prob=0.0,
                              whole_word_mask=whole_word_mask)
    instances = create_instances(documents, range(len(documents)), VOCAB, options, rng)
    tokens = sum(len(i.tokens) for i in instances)
    predicted = [(i.tokens[p], label) for i in instances for p, label in zip(i.masked_lm_positions, i.masked_lm_labels)]
    n = len(predicted)
    assert n > 600
    # mask rate: 15% of all tokens ([CLS]/[SEP] counted, as in the original), less only by rounding/skipped words
    assert 0.13 < n / tokens < 0.16
    # 80% [MASK] / 10% random / 10% unchanged
    as_mask = sum(shown == MASK for shown, _ in predicted) / n
    unchanged = sum(shown == label for shown, label in predicted) / n
    assert abs(as_mask - 0.8) < 0.05 and abs(unchanged - 0.1) < 0.04 and abs(1 - as_mask - unchanged - 0.1) < 0.04
    # IsNext: 50% of the chunks of two or more sentences; the single-sentence chunk that may end a
    # document is always NotNext, and a NotNext chunk gives back its unused sentences, which start
    # another chunk: so the share is about 46% (see docs/data.md)
    is_next = np.mean([i.next_sentence_label == IS_NEXT for i in instances])
    assert 0.37 < is_next < 0.55       # mean 0.46, standard deviation 0.02 over seeds
