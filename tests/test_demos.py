"""Every demo in demos/ runs as a student would run it (`python demos/NN_name.py`), exits 0
and says "all checks passed" - the demos assert their own numbers as they go - and with --step
pauses between its stages. (The walkthrough, 11, needs a checkpoint: tests/test_walkthrough.py.)"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.patience import HANG_SECONDS

ROOT = Path(__file__).resolve().parents[1]
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
def test_demo_runs_and_checks_itself_stage_by_stage(demo):
    """With --step (one run per demo covers both: the rest of a demo does not depend on it), two
    lines of input, then its end: a prompt between every two stages (the first two answered by
    Enter, the rest by the end of input), stages numbered 1, 2, ... in order, every check passed."""
    proc = subprocess.run([sys.executable, str(demo), "--step"], cwd=ROOT, input="\n\n", capture_output=True,
                          text=True, timeout=HANG_SECONDS)
    assert proc.returncode == 0, f"{demo.name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert proc.stdout.rstrip().endswith("all checks passed"), f"{demo.name}:\n{proc.stdout[-2000:]}"
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", proc.stdout, flags=re.M)]
    assert len(numbers) >= 3 and numbers == list(range(1, len(numbers) + 1)), numbers
    assert proc.stdout.count(PROMPT) == len(numbers) - 1
    for n in numbers[1:]:                                  # each prompt comes right before a stage
        assert f"{PROMPT}\n{n}. " in proc.stdout


@pytest.mark.slow
def test_without_step_a_demo_never_waits():
    """`python demos/01_linear.py` with an input that stays open: it must finish on its own. A demo
    waits only after printing the prompt, so its output up to the end or the prompt decides (no
    clock: a slow machine only takes longer)."""
    demo = ROOT / "demos" / "01_linear.py"
    proc = subprocess.Popen([sys.executable, str(demo)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
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
