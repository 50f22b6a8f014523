"""Every demo in demos/ runs as a student would run it (`python demos/NN_name.py`), exits 0
and says "all checks passed" - the demos assert their own numbers as they go - and with --step
pauses between its stages. (The walkthrough, 11, needs a checkpoint: tests/course/test_walkthrough.py.)
Each runs in an empty working directory of its own: a demo that uses the reader's own run when
there is one (12: runs/pretrain) must not be tested against whatever the checkout holds."""
import os
import re
import subprocess
import sys

import pytest
from support.patience import HANG_SECONDS
from support.paths import ROOT

DEMOS = sorted((ROOT / "demos").glob("[0-9][0-9]_*.py"))
STANDALONE = [d for d in DEMOS if d.name != "11_walkthrough.py"]
PROMPT = "-- Enter: next stage --"


def test_demos_exist_and_are_listed_in_the_readme():
    assert len(DEMOS) >= 10
    readme = (ROOT / "demos" / "README.md").read_text(encoding="utf-8")
    for demo in DEMOS:
        assert demo.name in readme, f"{demo.name} is not in demos/README.md"


@pytest.mark.slow
@pytest.mark.parametrize("demo", STANDALONE, ids=[d.stem for d in STANDALONE])
def test_demo_runs_and_checks_itself_stage_by_stage(demo, tmp_path):
    """With --step (one run per demo covers both: the rest of a demo does not depend on it), two
    lines of input, then its end: a prompt between every two stages (the first two answered by
    Enter, the rest by the end of input), stages numbered 1, 2, ... in order, every check passed."""
    proc = subprocess.run([sys.executable, str(demo), "--step"], cwd=tmp_path, input="\n\n", capture_output=True,
                          text=True, timeout=HANG_SECONDS)
    assert_checked_itself(demo, proc)
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", proc.stdout, flags=re.M)]
    assert len(numbers) >= 3 and numbers == list(range(1, len(numbers) + 1)), numbers
    assert proc.stdout.count(PROMPT) == len(numbers) - 1
    for n in numbers[1:]:                                  # each prompt comes right before a stage
        assert f"{PROMPT}\n{n}. " in proc.stdout


def assert_checked_itself(demo, proc):
    assert proc.returncode == 0, f"{demo.name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert proc.stdout.rstrip().endswith("all checks passed"), f"{demo.name}:\n{proc.stdout[-2000:]}"


@pytest.mark.slow
def test_what_it_learned_on_the_readers_own_default_run(tmp_path):
    """README's order: `npbert pretrain` first (runs/pretrain: the whole built-in corpus, here cut
    to 2 steps), then demo 12 in that directory, which takes that run's model and counts its
    corpus: every check must pass on it too (the unigram's tie on a sentence and its reverse
    once failed on the whole corpus's counts, by rounding, and only there)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    made = subprocess.run([sys.executable, "-m", "npbert.cli", "pretrain", "--steps", "2", "--eval-every", "0",
                           "--backend", "numpy"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert made.returncode == 0, made.stderr[-2000:]
    demo = ROOT / "demos" / "12_what_it_learned.py"
    proc = subprocess.run([sys.executable, str(demo)], cwd=tmp_path, capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=HANG_SECONDS)
    assert_checked_itself(demo, proc)
    assert f"{os.path.join('runs', 'pretrain')}: 2 layers, hidden 128" in proc.stdout


@pytest.mark.slow
def test_without_step_a_demo_never_waits(tmp_path):
    """`python demos/01_linear.py` with an input that stays open: it must finish on its own. A demo
    waits only after printing the prompt, so its output up to the end or the prompt decides (no
    clock: a slow machine only takes longer)."""
    demo = ROOT / "demos" / "01_linear.py"
    proc = subprocess.Popen([sys.executable, str(demo)], cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = b""
    try:
        while PROMPT.encode() not in out:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:                                  # the end of its output: it did not wait
                break
            out += chunk
        if PROMPT.encode() not in out:
            proc.wait(timeout=HANG_SECONDS)
    finally:
        proc.kill()
        proc.stdin.close()
        proc.stdout.close()
    out = out.decode()
    assert PROMPT not in out, "it waits for Enter without --step"
    assert proc.returncode == 0 and out.rstrip().endswith("all checks passed")
