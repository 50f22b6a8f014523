"""The pseudo-log-likelihood scorer (npbert/linguistics/pll.py) against a brute force that runs each
masked copy alone through the padded reference model (pretraining_forward's MLM head, float64),
on random tiny models; and the verdicts it feeds (a tie is wrong)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npbert import backend
from npbert.config import BertConfig
from npbert.linguistics.accuracy import correct, group_accuracies, wilson_interval
from npbert.linguistics.builtin_pairs import builtin_pairs
from npbert.linguistics.minimal_pairs import ScoredPairs, score_with_bert, tokenize_pairs
from npbert.linguistics.pll import masked_copies, pseudo_log_likelihoods, token_log_probs
from npbert.data.builtin_vocab import builtin_vocab
from npbert.model import pretraining_forward
from npbert.model_params import init_params
from npbert.tokenizer import BertTokenizer

CLS, SEP, MASK, UNK = 2, 3, 4, 1
SPECIAL = (CLS, SEP, MASK)


def tiny_model(seed, vocab=40, hidden=8, heads=2, layers=2, positions=48, dtype=np.float64):
    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=2 * hidden, max_position_embeddings=positions)
    params = init_params(config, np.random.default_rng(seed), dtype=dtype)
    rng = np.random.default_rng(seed + 1)               # weights far from init, so the scores are not all alike
    return config, {k: (v + rng.normal(0, 0.3, v.shape)).astype(dtype) for k, v in params.items()}


def brute_force_pll(params, config, pieces):
    """Each masked copy alone through pretraining_forward (padded reference), float64 log-softmax."""
    ids = np.array([[CLS, *pieces, SEP]])
    total = 0.0
    for i in range(1, len(pieces) + 1):
        copy = ids.copy()
        copy[0, i] = MASK
        out, _ = pretraining_forward(params, config, copy, mlm_positions=np.array([i]),
                                     mlm_labels=np.array([ids[0, i]]), nsp_labels=np.array([0]))
        logits = out["mlm_logits"][0].astype(np.float64)                            # (V,)
        total += logits[ids[0, i]] - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))
    return total


@pytest.mark.parametrize("name", ["numpy", "numba"])
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), lengths=st.lists(st.integers(1, 40), min_size=1, max_size=5),
       unk=st.booleans(), batch_tokens=st.sampled_from([1, 64, 4096]))
def test_pll_equals_the_brute_force_reference(name, seed, lengths, unk, batch_tokens):
    backend.set_backend(name)
    config, params = tiny_model(seed)
    rng = np.random.default_rng(seed)
    sentences = [list(rng.integers(5, config.vocab_size, n)) for n in lengths]
    if unk:
        sentences[0][rng.integers(len(sentences[0]))] = UNK
    got = pseudo_log_likelihoods(params, config, sentences, SPECIAL, batch_tokens=batch_tokens)
    want = np.array([brute_force_pll(params, config, s) for s in sentences])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_token_log_probs_are_per_piece_and_float32_follows_float64():
    config, params64 = tiny_model(3)
    params32 = {k: v.astype(np.float32) for k, v in params64.items()}
    sentences = [[7, 8, 9], [10], [11, 12, 13, 14, 15, 16]]
    rows64 = token_log_probs(params64, config, sentences, SPECIAL)
    rows32 = token_log_probs(params32, config, sentences, SPECIAL)
    assert [len(r) for r in rows64] == [3, 1, 6] and all((r < 0).all() for r in rows64)
    for r32, r64 in zip(rows32, rows64):
        np.testing.assert_allclose(r32, r64, rtol=1e-4, atol=1e-4)


def test_masked_copies_mask_each_piece_once():
    ids = np.array([[CLS, 11, 12, 13, SEP], [CLS, 21, 22, 23, SEP]])
    copies, positions, targets = masked_copies(ids, MASK)
    assert copies.shape == (6, 5)
    assert list(targets) == [11, 12, 13, 21, 22, 23]
    assert list(copies.reshape(-1)[positions]) == [MASK] * 6
    assert (copies == MASK).sum() == 6 and (copies[:, [0, -1]] == [CLS, SEP]).all()


def test_sentences_that_tokenize_alike_get_the_very_same_score():
    config, params = tiny_model(5, dtype=np.float32)
    same = [5, 6, 7, 8]
    scores = pseudo_log_likelihoods(params, config, [same, [9, 10], same, [5, 6, 7, 8]], SPECIAL, batch_tokens=16)
    assert scores[0] == scores[2] == scores[3]
    assert not correct([scores[0]], [scores[2]])[0]                        # a tie is wrong


def test_ties_count_as_wrong():
    assert list(correct([1.0, 1.0, 2.0, -3.0], [1.0, 0.5, 2.5, -3.0])) == [False, True, False, False]


def test_a_model_with_the_same_logits_for_every_input_scores_zero_on_equal_lengths():
    """The MLM transform's LayerNorm at 0 makes every logit the decoder bias (0): p = 1/V for every
    piece of every input, so two sentences of one length score the same, every pair ties, and the
    accuracy is 0, not 50 %."""
    tokenizer = BertTokenizer(builtin_vocab())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    params = init_params(config, np.random.default_rng(0))
    params["cls.predictions.transform.LayerNorm.weight"][:] = 0
    pairs = builtin_pairs(per_paradigm=40)
    tokenized = tokenize_pairs(tokenizer, pairs, config.max_position_embeddings)
    assert all(len(g) == len(b) for g, b in zip(tokenized.good, tokenized.bad))
    scored = ScoredPairs(tokenized)
    score_with_bert(scored, "bert", params, config, tokenizer, log=lambda *_: None)
    overall = scored.accuracies()[0]
    assert overall.level == "overall" and overall.pairs == 240 and overall.right["bert"] == 0


def test_wilson_interval():
    low, high = wilson_interval(8, 10)
    assert abs(low - 0.4902) < 1e-4 and abs(high - 0.9433) < 1e-4
    assert wilson_interval(0, 20)[0] == 0.0 and wilson_interval(20, 20)[1] == 1.0
    low, high = wilson_interval(500, 1000)
    assert abs((high - low) / 2 - 0.0309) < 1e-3


def test_group_accuracies_overall_field_phenomenon_paradigm():
    pairs = builtin_pairs(per_paradigm=3)
    right = np.arange(len(pairs)) % 2 == 0
    rows = group_accuracies(pairs, {"m": right})
    assert [r.level for r in rows][:1] == ["overall"] and rows[0].pairs == 18 and rows[0].right["m"] == 9
    by = {(r.level, r.name): r for r in rows}
    assert by[("field", "morphology")].pairs == 12 and by[("field", "syntax")].pairs == 6
    assert by[("phenomenon", "subject_verb_agreement")].pairs == 6
    assert sum(r.pairs for r in rows if r.level == "paradigm") == 18


def test_one_sentence_says_whether_the_model_beats_each_baseline():
    """1,000 pairs at 60 % give the model [57.0, 63.0]: a baseline below it is beaten, one above
    it is ahead, one inside it is not told apart by these pairs."""
    from npbert.linguistics.accuracy import GroupAccuracy
    from npbert.linguistics.report import verdict
    overall = GroupAccuracy("overall", "overall", 1000, {"bert": 600, "unigram": 500, "3-gram": 700, "random": 610})
    assert verdict(overall, ["bert", "unigram", "3-gram", "random"]) == (
        "overall, bert (60.0 %) is ahead of unigram (50.0 %), behind 3-gram (70.0 %), "
        "within its 95% interval [56.9, 63.0] of random (61.0 %)")
    assert verdict(overall, ["bert", "unigram"]) == "overall, bert (60.0 %) is ahead of unigram (50.0 %)"
    assert verdict(overall, ["bert"]) is None
