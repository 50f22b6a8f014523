"""Fuzzing the task readers: random bytes, and valid files of every format after random edits,
give examples of the documented form or a one-line DataError that names the file, never
UnicodeDecodeError, KeyError, IndexError, JSONDecodeError, csv.Error or any other exception.
Hand-written cases first (regression tests for bugs fuzzing found), then the properties."""
import csv
import io
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npbert.commands.predict_lines import LINES, examples_from_lines
from npbert.errors import DataError
from npbert.finetuning.evaluation import label_names
from npbert.tasks.encoding import encode_sequences
from npbert.tasks.registry import TASKS, read_examples
from npbert.tokenizer import SPECIAL_TOKENS, BertTokenizer
from support.fuzzing import SPECIAL_BYTES, fuzz, json_mutated, mutated, outcome

SQUAD = {"version": "1.1", "data": [{"title": "t", "paragraphs": [
    {"context": "The cat sat on the mat. A dog ran in Paris.",
     "qas": [{"id": "q1", "question": "Who sat?", "answers": [{"text": "The cat", "answer_start": 0}]},
             {"id": "q2", "question": "Where?", "answers": [{"text": "Paris", "answer_start": 37},
                                                            {"text": "in Paris", "answer_start": 34}]}]}]}]}
# (task, file name, a valid file): every format a task reads from a file
VALID = [
    ("sst-2", "train.tsv", "sentence\tlabel\nthe cat sat\t1\na dog ran\t0\n"),
    ("cola", "train.tsv", "gj04\t1\t\tthe cat sat .\ngj04\t0\t*\tcat the sat .\n"),
    ("cola", "test.tsv", "index\tsentence\n0\tthe cat sat .\n"),
    ("mrpc", "train.tsv", "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t7\t8\tthe cat\ta cat\n"),
    ("sts-b", "train.tsv", "index\tsentence1\tsentence2\tscore\n0\ta cat\tthe cat\t4.250\n1\tx\ty\t0.5\n"),
    ("qqp", "train.tsv", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n0\t1\t2\twho?\twho is?\t1\n"),
    ("mnli", "dev.tsv", "index\tsentence1\tsentence2\tgold_label\n0\tA \"quoted\" one\tB\tneutral\n"),
    ("qnli", "test.tsv", "index\tquestion\tsentence\n0\twho\tthe cat\n"),
    ("rte", "train.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n"),
    ("wnli", "train.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\t1\n"),
    ("classification", "train.csv", 'text,text_pair,label\n"the cat, sat",on a mat,pos\na dog ran,,neg\n'),
    ("classification", "train.jsonl", '{"text": "a", "text_pair": "b", "label": 10}\n\n{"text": "c", "label": 9}\n'),
    ("regression", "train.csv", "text,label\nthe cat,0.5\na dog,-1e3\n"),
    ("regression", "train.jsonl", '{"text": "a", "label": 1.5}\n{"text": "b", "label": "2"}\n'),
    ("conll", "train.txt", "-DOCSTART- -X- O O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n"),
    ("conll", "test.txt", "EU\nrejects\n\nPeter\n"),
    ("squad", "train.json", json.dumps(SQUAD, indent=1)),
    ("swag", "train.csv", "video-id,sent1,sent2,ending0,ending1,ending2,ending3,label\n"
                          'v,The cat sat.,It,"ran, fast",slept,ate,sang,1\n'),
]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """One directory for all the examples of this module (each overwrites its file)."""
    return tmp_path_factory.mktemp("fuzz")


def read(task_name, path):
    """A task file -> its examples and labels, as finetune reads them."""
    task = TASKS[task_name]
    examples = read_examples(task, str(path))
    return examples, label_names(task, examples)


def check_examples(kind, examples):
    """Records of the form npbert/tasks/__init__.py documents, ready to encode."""
    assert isinstance(examples, list) and examples
    for ex in examples:
        assert isinstance(ex["where"], str)
        if kind == "sequence_classification":
            assert isinstance(ex["text"], str) and isinstance(ex["text_pair"], (str, type(None)))
            assert isinstance(ex.get("label"), (str, type(None)))
        elif kind == "token_classification":
            assert ex["words"] and all(isinstance(w, str) and w and not any(c.isspace() for c in w)
                                       for w in ex["words"])
            assert ex["tags"] is None or (len(ex["tags"]) == len(ex["words"])
                                          and all(isinstance(t, str) and t for t in ex["tags"]))
        elif kind == "question_answering":
            assert isinstance(ex["id"], str) and isinstance(ex["question"], str) and isinstance(ex["context"], str)
            for a in ex["answers"]:
                assert isinstance(a["text"], str) and type(a["answer_start"]) is int and a["answer_start"] >= 0
                assert ex["context"][a["answer_start"]:a["answer_start"] + len(a["text"])] == a["text"]
        else:
            assert isinstance(ex["context"], str) and all(isinstance(e, str) for e in ex["endings"])
            assert ex["label"] is None or ex["label"] in range(len(ex["endings"]))


def check_file(task_name, path, data: bytes):
    """The fuzz verdict on one file: examples of the right form (and their labels), or a
    DataError that names the file."""
    path.write_bytes(data)
    result = outcome(read, task_name, path)
    if isinstance(result, DataError):
        assert str(path) in str(result), str(result)
    else:
        examples, labels = result
        check_examples(TASKS[task_name].head.name, examples)
        assert labels is None or (isinstance(labels, list) and all(isinstance(s, str) for s in labels))


@pytest.mark.parametrize("task_name, name, text", VALID, ids=[f"{t}-{n}" for t, n, _ in VALID])
def test_the_valid_files_are_valid(tmp_path, task_name, name, text):
    # the seeds of the mutation fuzzing must be read, or the mutations test only the error paths
    (tmp_path / name).write_text(text, "utf-8")
    examples, _ = read(task_name, tmp_path / name)
    check_examples(TASKS[task_name].head.name, examples)


# --- hand-written cases ---------------------------------------------------------------------------

@pytest.mark.parametrize("task_name, name, text, shown", [
    ("classification", "a.csv", '"te\nxt",label\nx,1\n', r"the header has 'te\nxt', label"),
    ("mnli", "a.tsv", "\r\x1f\n", r"the header has '\r\x1f'"),   # (a NUL byte is refused as binary first)
    ("sst-2", "a.tsv", "sentence \tlabel\nx\t1\n", "the header has 'sentence ', label"),
    ("sst-2", "a.tsv", "\tlabel\u2028\n", r"the header has '', 'label\u2028'"),
    ("swag", "a.csv", ",".join(f"column{i}" for i in range(100)) + "\n", "... (100 columns)"),
])
def test_missing_columns_show_the_header_on_one_line(tmp_path, task_name, name, text, shown):
    # Fixed bug: the header's names were joined as they were, line breaks included, and a
    # padded name ("sentence ") looked like the one that was missing.
    (tmp_path / name).write_text(text, "utf-8", newline="")
    error = outcome(read, task_name, tmp_path / name)
    assert isinstance(error, DataError) and str(error).endswith(shown), str(error)


def squad_with(changes: dict) -> str:
    """The valid SQuAD file with members of its first paragraph replaced by JSON texts, each
    named by its path of keys and list indices ("qas.0.answers.0.text")."""
    obj = json.loads(json.dumps(SQUAD))
    for n, path in enumerate(changes):
        *parents, last = path.split(".")
        node = obj["data"][0]["paragraphs"][0]
        for key in parents:
            node = node[int(key) if isinstance(node, list) else key]
        node[int(last) if isinstance(node, list) else last] = f"<replaced {n}>"
    text = json.dumps(obj)
    for n, value in enumerate(changes.values()):
        text = text.replace(f'"<replaced {n}>"', value)
    return text


@pytest.mark.parametrize("text, message", [
    ('{"data": [], "n": ' + "1" * 5000 + "}", "not SQuAD JSON"),                  # fixed: ValueError
    ('{"data": ' + "[" * 100_000, "not SQuAD JSON"),                               # fixed: RecursionError
    ("[]", 'not SQuAD v1.1 JSON: expected an object with "data", found a list'),
    ('{"data": {}}', '"data" must be a list, found an object'),
    ('{"data": [[]]}', r'\(data\[0\]\): not SQuAD v1.1 JSON: expected an object with "paragraphs", found a list'),
    (squad_with({"qas.0": "[1]"}), r"qas\[0\]\): not SQuAD v1.1 JSON: expected an object"),   # fixed: AttributeError
    (squad_with({"qas.0": '"q1"'}), "expected an object with \"id\", found a string"),         # fixed: AttributeError
    (squad_with({"qas.0.answers.0.answer_start": "Infinity"}), '"answer_start" must be an integer, found a float'),
    (squad_with({"qas.0.answers.0.answer_start": "0.9"}), '"answer_start" must be an integer'),  # fixed: int(0.9) = 0
    (squad_with({"qas.0.answers.0.answer_start": "true"}), '"answer_start" must be an integer'),  # fixed: True = 1
    (squad_with({"qas.0.answers.0.answer_start": '"0"'}), '"answer_start" must be an integer, found a string'),
    (squad_with({"qas.0.answers.0.text": "5"}), '"text" must be a string, found an integer'),
    (squad_with({"qas.0.question": "5"}), '"question" must be a string, found an integer'),   # fixed: accepted
    (squad_with({"qas.0.question": "null"}), '"question" must be a string, found null'),
    (squad_with({"qas.0.id": '{"a": 1}'}), '"id" must be a string or an integer, found an object'),
    (squad_with({"context": '["The cat"]', "qas.0.answers.0.text": '["The cat"]'}),
     '"context" must be a string, found a list'),                                  # fixed: AttributeError
    (squad_with({"qas.0.answers": "null"}), '"answers" must be a list, found null'),
])
def test_squad_that_is_not_squad(tmp_path, text, message):
    (tmp_path / "s.json").write_text(text, "utf-8")
    error = outcome(read, "squad", tmp_path / "s.json")
    assert isinstance(error, DataError) and re.search(message, str(error)), error
    assert str(tmp_path / "s.json") in str(error)


@pytest.mark.parametrize("line, message", [
    ('{"text": "a", "n": ' + "1" * 5000 + "}", "not a JSON object"),               # fixed: ValueError
    ("[" * 100_000, "not a JSON object"),                                             # fixed: RecursionError
    ('{"text": "a", "label": true}', '"label" must be a string or a number, found true'),   # fixed: "True"
    ('{"text": "a", "label": [1]}', '"label" must be a string or a number, found a list'),  # fixed: "[1]"
    ('{"text": "a", "label": {}}', '"label" must be a string or a number, found an object'),
])
def test_jsonl_lines_that_are_not_examples(tmp_path, line, message):
    (tmp_path / "d.jsonl").write_text('{"text": "fine", "label": 1}\n' + line + "\n", "utf-8")
    error = outcome(read, "classification", tmp_path / "d.jsonl")
    assert isinstance(error, DataError) and re.search(message, str(error)), error
    assert f"{tmp_path / 'd.jsonl'}:2: " in str(error)


@pytest.mark.parametrize("labels, expected", [
    (["10", "2", "-1"], ["-1", "2", "10"]),                  # numbers in numeric order
    (["b", "a", "10", "2"], ["10", "2", "a", "b"]),          # else as text
    (["2", "²"], ["2", "²"]),                                # fixed: "²".isdigit(), but int("²") fails
    (["--1", "1"], ["--1", "1"]),                            # fixed: "--1".lstrip("-") looked numeric
    (["1", "01", "001", "+1", "1_0", "0"], ["0", "+1", "001", "01", "1", "1_0"]),   # fixed: ties in set order
])
def test_label_order(tmp_path, labels, expected):
    rows = "".join(f"x,{label}\n" for label in labels)
    (tmp_path / "d.csv").write_text("text,label\n" + rows, "utf-8")
    assert read("classification", tmp_path / "d.csv")[1] == expected


@pytest.mark.parametrize("label", ["nan", "NaN", "inf", "-Infinity", "1e999", "x", ""])
def test_regression_labels_must_be_finite_numbers(tmp_path, label):
    # Fixed bug: "nan" and "inf" parse as floats and were taken, making the loss NaN later.
    (tmp_path / "r.csv").write_text(f"text,label\nthe cat,0.5\na dog,{label}\n", "utf-8")
    examples = read_examples(TASKS["regression"], str(tmp_path / "r.csv"))
    with pytest.raises(DataError, match=f"r.csv:3: label '{label}' is not a finite number"):
        encode_sequences(examples, BertTokenizer(list(SPECIAL_TOKENS)), 16, regression=True)


# --- properties -----------------------------------------------------------------------------------

@fuzz
@given(valid=st.sampled_from(VALID), data=st.data())
def test_mutated_valid_files(work, valid, data):
    task_name, name, text = valid
    check_file(task_name, work / name, data.draw(mutated(text.encode("utf-8"), max_edits=3)))


@fuzz
@given(squad=json_mutated(SQUAD))
def test_squad_files_with_parts_of_any_json_type(work, squad):
    """The structure-aware fuzzer for SQuAD: any member of any object replaced or left out."""
    check_file("squad", work / "squad.json", json.dumps(squad).encode("utf-8"))


JSONL_RECORDS = [{"text": "a", "text_pair": "b", "label": "x"}, {"text": "c", "label": 9}, {"text": "d", "label": 0.5}]


@fuzz
@given(task_name=st.sampled_from(["classification", "regression"]), records=json_mutated(JSONL_RECORDS))
def test_jsonl_lines_with_parts_of_any_json_type(work, task_name, records):
    lines = records if isinstance(records, list) else [records]
    check_file(task_name, work / "d.jsonl", "".join(json.dumps(r) + "\n" for r in lines).encode("utf-8"))


@fuzz
@given(labels=st.lists(st.text(st.sampled_from("0123456789-+_ ²٣a\u0660")
                               | st.characters(exclude_characters="\r\x00", exclude_categories=("Cs",)),
                               min_size=1, max_size=4), min_size=1, max_size=8))
def test_labels_of_any_text(work, labels):
    """Whatever the labels, the task's label list holds each once, in an order that does not
    depend on the order of the examples. (A NUL byte makes the file binary: refused, tested apart.)"""
    orders = []
    for rows in (labels, labels[::-1]):
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows([["text", "label"]] + [["x", label] for label in rows])
        (work / "labels.csv").write_text(text.getvalue(), "utf-8")
        orders.append(read("classification", work / "labels.csv")[1])
    assert sorted(orders[0]) == sorted(set(labels)) and orders[0] == orders[1]


FORMATS = sorted({(task_name, name.split(".")[1]) for task_name, name, _ in VALID})


@fuzz
@given(task_format=st.sampled_from(FORMATS),
       data=st.binary(max_size=200) | st.lists(st.sampled_from(SPECIAL_BYTES).map(lambda b: bytes([b]))
                                               | st.binary(max_size=4), max_size=60).map(b"".join))
def test_random_bytes(work, task_format, data):
    task_name, extension = task_format
    check_file(task_name, work / f"random.{extension}", data)


@fuzz
@given(task=st.sampled_from(list({t.format: t for t in TASKS.values()}.values())),   # a task of each format
       text=st.text(st.sampled_from("ab \t\n\r\x0b\x0c\x1c\x85\u2028\u3000\x00é中") | st.characters(), max_size=80))
def test_lines_to_predict_on(task, text):
    """npbert predict's lines (read with readlines(), universal newlines): one example per line
    (None for a blank one, which predict answers "(empty)"), or a DataError."""
    lines = io.StringIO(text, newline=None).readlines()
    result = outcome(examples_from_lines, LINES[task.format], lines, "input.txt")
    if isinstance(result, DataError):
        assert "input.txt" in str(result)
    else:
        assert len(result) == len(lines) and all((ex is None) == (not line.strip()) for ex, line in zip(result, lines))
        check_examples(task.head.name, [ex for ex in result if ex is not None])
