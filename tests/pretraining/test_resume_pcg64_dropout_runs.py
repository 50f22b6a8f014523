"""Runs started before dropout was counter-based, end to end on real run directories
written by that npbert (tests/fixtures/old_pcg64_runs.tar.gz, made by
tests/reference/make_old_runs_fixture.py): with dropout, --resume is refused with one line that
names the cause, and nothing in the run directory changes; without dropout a step has no
randomness, so the run resumes as it was: its last steps are the uninterrupted old run's."""
import json
import os
import tarfile

import numpy as np
import pytest

from npbert.cli import main
from support.paths import FIXTURES

FIXTURE = FIXTURES / "old_pcg64_runs.tar.gz"


@pytest.fixture
def old_runs(tmp_path, monkeypatch):
    """The fixture's run directories under tmp_path, their recorded paths moved there with them."""
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    root = (tmp_path / "root.txt").read_text()
    for run in ("run-dropout", "run-no-dropout"):
        state = tmp_path / run / "checkpoint" / "training_state.json"
        state.write_text(state.read_text().replace(root, str(tmp_path)))
    monkeypatch.setenv("NPBERT_BACKEND", "numpy")                # the backend the runs were saved on
    return tmp_path


def contents(directory):
    out = {}
    for dirpath, _, files in os.walk(directory):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                out[os.path.relpath(os.path.join(dirpath, name), directory)] = f.read()
    return out


def train_losses(path):
    with open(path) as f:
        return {r["step"]: r["loss"] for r in map(json.loads, f) if r["kind"] == "train"}


def test_an_old_run_with_dropout_is_refused_in_one_line_and_left_as_it_was(old_runs, capsys):
    out = str(old_runs / "run-dropout")
    before = contents(out)
    assert main(["pretrain", "--out", out, "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "PCG64" in err and "counter-based" in err and out in err, err
    assert contents(out) == before


def test_an_old_run_without_dropout_resumes_as_it_was(old_runs, capsys):
    out = str(old_runs / "run-no-dropout")
    assert main(["pretrain", "--out", out, "--resume"]) == 0
    assert "step     6/6" in capsys.readouterr().out
    got, want = train_losses(os.path.join(out, "metrics.jsonl")), train_losses(old_runs / "whole-no-dropout" /
                                                                               "metrics.jsonl")
    assert sorted(got) == sorted(want) == list(range(1, 7))
    # float32 steps; this npbert's fused decoder rounds differently from the old unfused one
    np.testing.assert_allclose([got[s] for s in range(1, 7)], [want[s] for s in range(1, 7)], rtol=1e-5)
    with open(os.path.join(out, "checkpoint", "training_state.json")) as f:
        assert json.load(f)["dropout"] == {"generator": "splitmix64", "seed": 5}   # saved in the new format
