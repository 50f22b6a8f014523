"""The built-in corpus and the four built-in tasks: deterministic, fully covered by their vocabulary,
and carrying the signals that make them learnable."""
import collections

import numpy as np
import pytest
import regex

from npbert.data import builtin_corpus as world
from npbert.data.builtin_corpus import generate_documents
from npbert.data.builtin_vocab import builtin_vocab
from npbert.data.builtin_tasks import TASKS, make_task
from npbert.data.builtin_tasks.stories import ENTITY_TAGS, FACT_LABELS


def label_names(name):
    return list(TASKS[name].labels)
from npbert.errors import DataError
from npbert.tokenizer import BertTokenizer

WORD = regex.compile(r"\w+|[^\w\s]")


@pytest.fixture(scope="module")
def documents():
    return generate_documents(300, seed=5)


def test_generation_is_deterministic_and_prefix_stable(documents):
    again = generate_documents(300, seed=5)
    assert [d.sentences for d in again] == [d.sentences for d in documents]
    assert [d.sentences for d in generate_documents(20, seed=5)] == [d.sentences for d in documents[:20]]
    assert [d.sentences for d in generate_documents(20, seed=6)] != [d.sentences for d in documents[:20]]


def test_default_corpus_size():
    assert world.DEFAULT_NUM_DOCUMENTS == 4000
    lengths = [len(d.sentences) for d in generate_documents(50)]
    assert 6 <= min(lengths) and max(lengths) <= 15


def test_vocabulary_layout():
    vocab = builtin_vocab()
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert len(set(vocab)) == len(vocab) and 300 < len(vocab) < 2000
    assert all(t == t.lower() and not t.startswith("##") for t in vocab[5:])


def test_tokenizer_on_the_builtin_vocab_gives_whole_words_and_no_unk(documents):
    tokenizer = BertTokenizer(builtin_vocab())
    texts = [s for d in documents for s in d.sentences]
    for task in TASKS:
        for r in make_task(task, "dev", num_documents=30):
            texts += [r[k] for k in ("text", "text_pair", "question", "context") if k in r]
            texts += r.get("words", [])
    for text in texts:
        tokens = tokenizer.tokenize(text)
        assert tokens == WORD.findall(text.lower())     # one token per word or punctuation mark
        assert "[UNK]" not in tokens


def test_each_story_is_about_one_person(documents):
    for doc in documents:
        p = doc.person
        text = " ".join(doc.sentences)
        assert doc.sentences[0].count(p.full) == 1 and p.city in doc.sentences[0] and p.job in doc.sentences[0]
        assert doc.sections[0] == "intro" and doc.sections[-1] == "ending"
        assert sum(p.first in s or s.split()[0] in ("He", "She") for s in doc.sentences) >= len(doc.sentences) / 2
        words = set(WORD.findall(text))
        if p.gender == "male":
            assert not words & {"she", "She", "her", "Her"}
        else:
            assert not words & {"he", "He", "him"}
        if f"{p.city} is a city in" in text:
            assert f"{p.city} is a city in {p.country}" in text


def test_signals_for_nsp_and_a_realistic_mlm_baseline(documents):
    # a random other story rarely shares the main person's first name (NSP), and the most frequent
    # token is a modest share of all tokens (a most-frequent-token MLM baseline well under 20%)
    firsts = [d.person.first for d in documents]
    same = np.mean([firsts[i] == firsts[j] for i, j in np.random.default_rng(0).integers(0, 300, (2000, 2)) if i != j])
    assert same < 0.05
    counts = collections.Counter(w for d in documents for s in d.sentences for w in WORD.findall(s.lower()))
    assert 0.05 < counts.most_common(1)[0][1] / sum(counts.values()) < 0.2


def test_tasks_are_deterministic_and_splits_differ():
    for task in TASKS:
        train = make_task(task, "train", num_documents=20)
        assert train == make_task(task, "train", num_documents=20) and len(train) >= 20
        assert make_task(task, "dev", num_documents=20) != train
        assert make_task(task, "train", num_documents=20, seed=1) != train


def test_topic_task():
    records = make_task("builtin-sentence", "test", num_documents=200)
    names = label_names("builtin-sentence")
    assert len(names) == 12 and set(r["label"] for r in records) == set(range(12))
    assert all(set(r) == {"text", "label"} and r["text"].endswith(".") for r in records)
    baker = [r["text"] for r in records if names[r["label"]] == "baker"]
    assert any("bread" in t or "bakery" in t or "oven" in t or "flour" in t for t in baker)


def test_facts_task():
    records = make_task("builtin-pair", "train", num_documents=300)
    assert label_names("builtin-pair") == list(FACT_LABELS) == ["entailment", "neutral", "contradiction"]
    counts = collections.Counter(r["label"] for r in records)
    assert set(counts) == {0, 1, 2} and min(counts.values()) > 60
    for r in records:
        assert set(r) == {"text", "text_pair", "label"}
        premise, hypothesis = r["text"], r["text_pair"]
        name = hypothesis.split()[0]
        assert premise.startswith(name) or f"story of {name}" in premise
        stated = [w for w in [p.job for p in world.PROFESSIONS] + [c for c, _ in world.CITIES]
                  if regex.search(rf"\b{w}\b", hypothesis)]
        if r["label"] == 0:
            assert stated and all(w in premise for w in stated)
        elif r["label"] == 2:
            assert stated and not any(w in premise for w in stated)


def test_entities_task_is_valid_bio():
    records = make_task("builtin-tagging", "dev", num_documents=50)
    tags = {t for r in records for t in r["tags"]}
    assert tags <= set(ENTITY_TAGS) and {"B-PER", "I-PER", "B-LOC", "B-ORG", "I-ORG"} <= tags
    for r in records:
        assert len(r["words"]) == len(r["tags"])
        for prev, tag in zip(["O"] + r["tags"], r["tags"]):
            if tag.startswith("I-"):
                assert prev in ("B-" + tag[2:], tag)
    org = next(r for r in records if "B-ORG" in r["tags"])
    i = org["tags"].index("B-ORG")
    assert org["tags"][i:i + 3] == ["B-ORG", "I-ORG", "I-ORG"] and org["words"][i + 2] in {p.org_kind for p in world.PROFESSIONS}


def test_qa_task_spans_point_at_the_answers():
    records = make_task("builtin-qa", "dev", num_documents=60)
    kinds = collections.Counter(r["id"].split("-")[1] for r in records)
    assert {"job", "city", "hobby"} <= set(kinds) and len(kinds) >= 6
    assert len({r["id"] for r in records}) == len(records)
    for r in records:
        assert set(r) == {"id", "question", "context", "answers"} and r["question"].endswith("?")
        (answer,) = r["answers"]
        start = answer["answer_start"]
        assert r["context"][start:start + len(answer["text"])] == answer["text"]


def test_unknown_task_or_split():
    with pytest.raises(DataError, match="unknown built-in task 'ner'"):
        make_task("ner", "train")
    with pytest.raises(DataError, match="has the splits train, dev, test, not 'validation'"):
        make_task("builtin-qa", "validation")
