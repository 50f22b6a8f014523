"""The default run's figures in the docs come from benchmarks/default_run_seeds.py (the default
recipe over seeds). Its --quick mode, 60 steps of the same recipe on 500 documents, must end in
the range docs/pretraining.md states; the full run takes minutes and is not a test."""
import pytest

from support.scripts import load_script


def script():
    return load_script("benchmarks/default_run_seeds.py")


@pytest.mark.slow
def test_the_quick_default_run_ends_in_its_stated_range(tmp_path):
    s = script()
    r = s.run_seed(str(tmp_path), 0, s.QUICK)             # `npbert pretrain --seed 0 --steps 60 ...`, one thread
    low, high = s.QUICK_LOSS
    assert low <= r["final_loss"] <= high, r
    assert 0.0 < r["baseline_mlm_acc"] < 0.2 and 0.5 <= r["baseline_nsp_acc"] < 1.0, r
    assert r["cpu_s"] > 0 and r["wall_s"] > 0
    assert s.run_seed(str(tmp_path), 0, s.QUICK) == r       # kept, not run again


def test_the_report_gives_mean_std_and_range_over_seeds():
    runs = [dict(seed=k, mlm_acc=a, nsp_acc=0.8, baseline_mlm_acc=0.081, baseline_nsp_acc=0.588, final_loss=4.0,
                 wall_s=100.0, cpu_s=90.0 + k) for k, a in enumerate((0.30, 0.40, 0.35))]
    lines = script().report(runs, []).splitlines()
    assert lines[0].startswith("seed 0: held-out MLM 0.300 NSP 0.800 (baselines 0.081, 0.588)")
    assert lines[3] == "over 3 seeds (the default recipe): mean +- std, min..max"
    assert lines[4].split() == ["held-out", "MLM", "accuracy", "0.350", "+-", "0.050", "0.300..0.400"]
    assert lines[-1].split() == ["CPU", "time", "(s)", "91", "+-", "1", "90..92"]


def test_every_cpu_is_the_clis_default_and_one_thread_is_one_everywhere():
    # README's cost of `npbert pretrain` as written is --threads all: the kernels' threads left to the CLI
    s = script()
    assert "NPBERT_NUM_THREADS" not in s.thread_env("all") and s.thread_env("all")["OPENBLAS_NUM_THREADS"] == "1"
    assert set(s.thread_env("1").values()) == {"1"} and "NPBERT_NUM_THREADS" in s.thread_env("1")
