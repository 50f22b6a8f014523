"""`npbert predict` on what a user may hand it: a binary file, a directory, a missing file, a blank
line, an output it cannot write, a keyboard or stdin that is not UTF-8, /dev/null: one line a
problem, one output line an input line."""
import io
import os
import re
import sys

import pytest

from npbert.cli import main
from npbert.tasks.registry import TASKS
from support.error_lines import one_error_line
from support.random_models import SENTENCE_TASK, sentence_model, tagger  # noqa: F401  (fixtures)


@pytest.mark.parametrize("content, expected", [
    (b"caf\xe9 au lait\n", r"in.bin:1: not UTF-8 text \(byte b'\\xe9'\)"),
    (b"ok\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"in.bin:4: not UTF-8 text \(a NUL byte"),   # a PNG
])
def test_predict_on_a_binary_file_names_it(sentence_model, tmp_path, capsys, content, expected):
    path = tmp_path / "in.bin"
    path.write_bytes(content)
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(path)]) == 2
    assert re.search(expected, one_error_line(capsys, "predict"))


def test_predict_on_a_directory_or_a_missing_file(sentence_model, tmp_path, capsys):
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(tmp_path)]) == 2
    assert f"input file {tmp_path} is a directory, not a file" in one_error_line(capsys, "predict")
    missing = str(tmp_path / "missing.txt")
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", missing]) == 2
    assert f"input file not found: {missing}" in one_error_line(capsys, "predict")


def test_predict_gives_one_line_per_input_line_and_empty_for_a_blank_one(sentence_model, tmp_path, capsys):
    """Before: a blank line was skipped, so 4 lines with one blank gave 3 predictions, each but
    the first beside the wrong input. Every head's output keeps the lines, "(empty)" for a blank."""
    (tmp_path / "in.txt").write_text("Anna bakes bread.\n\n  \nTom flies planes.\n")
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(tmp_path / "in.txt")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and out[1] == out[2] == "(empty)"
    labels = TASKS["builtin-sentence"].labels
    assert all(line.split("\t")[0] in labels for line in (out[0], out[3]))


def test_predict_output_that_cannot_be_written(sentence_model, tmp_path, capsys):
    (tmp_path / "in.txt").write_text("Anna bakes bread.\n")
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(tmp_path / "in.txt"),
                 "--output", str(tmp_path)]) == 2
    assert f"cannot write --output {tmp_path}: it is a directory, not a regular file" in \
        one_error_line(capsys, "predict")


def test_predict_output_replaces_only_its_own_file(sentence_model, tmp_path, capsys):
    """Before: --output replaced whatever was there (the input, a user's file) with a plain
    open(..., "w"). Now outputs.py's rule: a new file, or one npbert predict wrote."""
    inp, out = tmp_path / "in.txt", tmp_path / "out.txt"
    inp.write_text("Anna bakes bread.\n\nTom flies planes.\n")
    args = ["predict", sentence_model, "--task", "builtin-sentence", "--input", str(inp), "--output"]
    out.write_text("precious\n")
    assert main(args + [str(out)]) == 2
    assert f"--output {out} exists and was not written by npbert" in one_error_line(capsys, "predict")
    assert out.read_text() == "precious\n"
    assert main(args + [str(inp)]) == 2
    assert f"cannot write --output {inp}: the command reads {inp}" in one_error_line(capsys, "predict")
    out.unlink()
    assert main(args + [str(out)]) == 0 and main(args + [str(out)]) == 0     # a re-run replaces its own
    assert out.read_text().splitlines()[1] == "(empty)"                     # atomic: no hidden file left
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.txt"]


@pytest.mark.parametrize("line, ours", [
    ("POSITIVE\t0.873", True), ("(empty)", True), ("-1.2500", True), ("Anna/B-PER lives/O", True),
    ("\t0.412", True), ("2\t0.500\tthe end", True),
    ("precious", False), ("a\tb", False), ("Anna lives", False), ("POSITIVE\t0.87", False)])
def test_predict_output_is_recognised_by_its_lines(line, ours):
    from npbert.commands.predict import predictions_output
    from npbert.outputs import HEAD_BYTES
    recognise = predictions_output("out.txt").ours
    assert recognise(f"{line}\nPOSITIVE\t1.000\n".encode()) == ours
    assert not recognise(f"{line}".encode()) and not recognise(b"")          # npbert ends its lines; empty: no line
    assert recognise(("POSITIVE\t0.500\n" * HEAD_BYTES)[:HEAD_BYTES].encode())   # a long file, its start cut


class Keyboard(io.TextIOWrapper):
    """stdin as a terminal, with these bytes typed."""

    def __init__(self, typed: bytes):
        super().__init__(io.BytesIO(typed), encoding="utf-8")

    def isatty(self):
        return True


@pytest.mark.parametrize("stdin, prompt", [(Keyboard, True), (lambda b: io.TextIOWrapper(io.BytesIO(b)), False)])
def test_predict_prompts_only_a_terminal(sentence_model, tagger, monkeypatch, capsys, stdin, prompt):
    # before: a terminal got no prompt, the command just waited
    monkeypatch.setattr(sys, "stdin", stdin(b"Anna bakes bread every morning.\n"))
    assert main(["predict", sentence_model, "--task", "builtin-sentence"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ("npbert predict: type one example per line (text[<TAB>text_pair]), then Ctrl-D to end\n"
                            if prompt else "")
    assert captured.out.split("\t")[0] in TASKS["builtin-sentence"].labels
    monkeypatch.setattr(sys, "stdin", stdin(b"Anna lives in Paris .\n"))
    assert main(["predict", tagger, "--task", "builtin-tagging"]) == 0
    assert ("type one example per line (words separated by spaces)" in capsys.readouterr().err) == prompt


def test_predict_on_stdin_that_is_not_utf8(sentence_model, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", Keyboard(b"ok\ncaf\xe9\n"))
    assert main(["predict", sentence_model, "--task", "builtin-sentence"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == \
        "npbert predict: error: <stdin>:2: not UTF-8 text (byte b'\\xe9')"


def test_predict_reads_dev_null_as_an_empty_input(sentence_model, capsys):
    # before: "input file not found: /dev/null"
    assert main(["predict", sentence_model, *SENTENCE_TASK, "--input", os.devnull]) == 2
    assert "/dev/null: no text to predict on" in one_error_line(capsys, "predict")


def test_predict_on_an_input_that_cannot_be_read(sentence_model, tmp_path, capsys):
    import socket
    path = str(tmp_path / "a.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        assert main(["predict", sentence_model, *SENTENCE_TASK, "--input", path]) == 2
    assert f"cannot read input file {path}: " in one_error_line(capsys, "predict")
