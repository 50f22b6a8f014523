"""`npbert pretrain --budget MINUTES`: the step count planned from timed steps, recorded, and
remade by --steps; the learning rate's decay ending at the planned step; a resumed run on the
same plan; refusals in one line. No verdict depends on how fast this machine is: the tests read
the count the run recorded, whatever it is."""
import json
import os

import numpy as np
import pytest

from npbert.checkpoint import load_pretrained
from npbert.cli import main
from npbert.errors import NpbertError
from npbert.pretraining.recipe import pretrain, pretraining_schedule
from npbert.training.budget import BudgetClock, time_steps
from support.pretraining_runs import data_dir, options, quiet, records, train_losses  # noqa: F401 (a fixture)

BUDGET = 0.25                    # minutes: a few seconds of steps of the small model


def plan_of(out):
    [plan] = records(out, "budget")
    with open(os.path.join(out, "checkpoint", "training_state.json")) as f:
        state = json.load(f)
    assert state["extra"]["budget_plan"]["steps"] == plan["steps"]      # recorded in the checkpoint too
    return plan


def params_of(out):
    return load_pretrained(os.path.join(out, "checkpoint")).params


def test_the_recorded_step_count_with_steps_remakes_the_model_to_the_bit(tmp_path, data_dir):
    budgeted = options(tmp_path / "budget", data_dir, steps=None, budget=BUDGET, warmup_proportion=0.1, log_every=5,
                       save_every=0)
    r = pretrain(budgeted, log=quiet)
    plan = plan_of(budgeted.out)
    assert plan["steps"] >= 1 and r["step"] == plan["steps"] and plan["budget_minutes"] == BUDGET
    again = options(tmp_path / "steps", data_dir, steps=plan["steps"], warmup_proportion=0.1, log_every=5,
                    save_every=0)
    pretrain(again, log=quiet)
    assert train_losses(budgeted.out) == train_losses(again.out)
    a, b = params_of(budgeted.out), params_of(again.out)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_the_learning_rate_decays_to_0_at_the_planned_step_and_is_never_negative(tmp_path, data_dir):
    opts = options(tmp_path, data_dir, steps=None, budget=BUDGET, log_every=1, save_every=0)
    pretrain(opts, log=quiet)
    steps = plan_of(opts.out)["steps"]
    lrs = [r["lr"] for r in records(opts.out, "train")]
    assert len(lrs) == steps and min(lrs) >= 0
    schedule = pretraining_schedule(options(tmp_path, data_dir, steps=steps))
    assert lrs == [schedule.lr(i) for i in range(steps)]                 # the run used that schedule, step by step
    assert schedule.lr(steps) == 0.0 and all(schedule.lr(i) >= 0 for i in range(steps + 5))
    assert schedule.warmup_steps == int(0.25 * steps)                     # the default warm-up share of the plan


def test_a_resumed_budget_run_keeps_its_plan_and_ends_as_the_planned_steps_would(tmp_path, data_dir):
    cut = 3
    stopped = options(tmp_path / "budget", data_dir, steps=None, budget=BUDGET, stop_after=cut, save_every=0)
    r = pretrain(stopped, log=quiet)
    planned = plan_of(stopped.out)["steps"]
    if planned <= cut:
        pytest.skip(f"this machine planned only {planned} steps: nothing left to resume")
    assert r["stopped"] and r["step"] == cut
    r = pretrain(options(tmp_path / "budget", data_dir, steps=None, budget=BUDGET, save_every=0), resume=True,
                 log=quiet)
    assert r["step"] == planned and len(records(stopped.out, "budget")) == 1     # planned once, not again
    with open(os.path.join(stopped.out, "checkpoint", "training_state.json")) as f:
        assert json.load(f)["options"]["steps"] is None                  # the plan, not an option, holds the count
    remade = options(tmp_path / "steps", data_dir, steps=planned, save_every=0)
    pretrain(remade, log=quiet)
    assert train_losses(stopped.out) == train_losses(remade.out)
    a, b = params_of(stopped.out), params_of(remade.out)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_budget_with_steps_is_refused_in_one_line(tmp_path, data_dir, capsys):
    out = tmp_path / "run"
    assert main(["pretrain", "--data", data_dir, "--out", str(out), "--budget", "1", "--steps", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["npbert pretrain: error: --budget and --steps cannot both be given: --budget plans the step "
                   "count (the run records it; --steps N alone remakes that run)"]
    assert not out.exists()
    for bad in ("0", "-1", "nan", "inf"):
        with pytest.raises(SystemExit) as e:                              # refused by the parser, as every range
            main(["pretrain", "--data", data_dir, "--out", str(out), "--budget", bad])
        assert e.value.code == 2 and not out.exists()
        assert f"argument --budget: must be a finite number > 0, got {bad}" in capsys.readouterr().err
    assert main(["pretrain", "--data", data_dir, "--out", str(out), "--warmup-steps", "3",
                 "--warmup-proportion", "0.1"]) == 2
    assert "--warmup-steps and --warmup-proportion cannot both be given" in capsys.readouterr().err
    with pytest.raises(NpbertError, match="--budget and --steps"):        # the Python API, before any file is read
        pretrain(options(tmp_path, "/nonexistent", steps=3, budget=1.0), log=quiet)


def test_a_budget_too_small_for_one_step_is_one_line_and_leaves_nothing(tmp_path, data_dir, capsys):
    out = tmp_path / "run"
    assert main(["pretrain", "--data", data_dir, "--out", str(out), "--budget", "1e-6"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("npbert pretrain: error: --budget 1e-06 leaves no time for one step: ")
    assert "(at least --budget " in err[0] and not out.exists()


def test_time_steps_leaves_the_compiling_steps_out_and_times_at_least_five():
    calls = []

    def step(batch):
        calls.append(batch)

    seconds = time_steps(step, lambda: iter([1, 2, 3]), budget_seconds=0.0)
    assert len(calls) == 2 + 5 and calls == [1, 2, 3, 1, 2, 3, 1]           # the batches read again as needed
    assert seconds >= 0


def test_the_clock_counts_what_earlier_invocations_spent():
    clock = BudgetClock(1.0, spent_before=50.0)
    assert 50.0 <= clock.spent() < 55.0
    assert clock.left().endswith(" of 1:00 left") and clock.left().startswith("0:")
