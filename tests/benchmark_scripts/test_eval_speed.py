"""benchmarks/eval_speed.py, the commands' evaluations on the padded and the packed forward,
stays runnable (its figures are in docs/performance.md and get re-measured): one round of the
held-out part on a small prepared corpus. It prints figures; nothing here asserts a time."""
import os
import subprocess
import sys

import pytest

from npbert.data.prepare import PrepareOptions, prepare
from support.patience import HANG_SECONDS
from support.paths import ROOT



@pytest.mark.slow
def test_the_heldout_part_runs_both_paths(tmp_path):
    data = str(tmp_path / "data")
    prepare(PrepareOptions(corpus="builtin", out=data, max_documents=24, dupe_factor=1, max_seq_length=32, seed=3),
            log=lambda *a, **k: None)
    run = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "eval_speed.py"), "--data", data,
                          "--rounds", "1", "--backends", "numpy"], capture_output=True, text=True,
                         timeout=HANG_SECONDS)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"b. held-out evaluation of a random tiny model on {data}: "), lines
    assert lines[1] == "   evaluate, numpy backend (1 rounds, CPU s of one thread):"
    assert [line.split()[0] for line in lines[2:]] == ["padded", "packed", "before"]
    assert all("mlm_acc" in line for line in lines[2:4])
