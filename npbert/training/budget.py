"""A time budget instead of a step count: how many steps fit in the minutes a run is given.

    seconds a step    timed on a copy of the run's model and optimizer (the run itself untouched:
                      its first step is the same whether the count was planned or given); with
                      phases on other data (short sequences, then long), each timed and weighted
                      by its share of the steps
    overhead          the job's evaluations and final report, from its own estimate
    steps             (budget - spent so far - final report) / (a step + its share of evaluations)

The count is resolved once, at the start, and recorded in the run (a `budget` metrics record and the
checkpoint's plan; --steps stays unset): a resumed run keeps it, and the same options with
--steps N give the same model to the bit. The learning rate's
decay reaches 0 at that step, so the schedule ends when the budget does. Wall time at the
threads the run has: on a busier machine the same budget plans fewer steps.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from npbert.errors import NpbertError
from npbert.training.progress import format_eta

UNTIMED_STEPS = 2          # the first steps compile the kernels (or load them from the cache)
TIMED_STEPS = 5            # at least this many steps timed ...
TIMED_SHARE = 0.02         # ... and at least this share of the budget (up to MAX_TIMED_SECONDS)
MAX_TIMED_SECONDS = 15.0
MARGIN = 0.02              # of the budget, kept for saves and the noise of a shared machine


@dataclass(frozen=True)
class Plan:
    steps: int
    step_seconds: float                  # one training step, as timed
    eval_seconds: float                  # the periodic evaluations' share of a step, on average
    spent_seconds: float                 # before the first step: preparation, compilation, calibration

    def describe(self, budget_minutes: float) -> str:
        return (f"budget {budget_minutes:g} min: {self.steps:,} steps planned ({self.step_seconds:.3f} s a step "
                f"timed here, evaluations {self.eval_seconds:.3f} s a step, {self.spent_seconds:.0f} s before the "
                f"first step); the learning rate reaches 0 at step {self.steps:,}")


def time_steps(step, batches, budget_seconds: float) -> float:
    """Seconds a call of step(batch) takes: UNTIMED_STEPS untimed, then at least TIMED_STEPS
    timed and at least TIMED_SHARE of the budget (batches() is read again when it runs out)."""
    want = min(MAX_TIMED_SECONDS, TIMED_SHARE * budget_seconds)
    done, timed, seconds = 0, 0, 0.0
    while timed < TIMED_STEPS or seconds < want:
        for batch in batches():
            t0 = time.perf_counter()
            step(batch)
            done += 1
            if done > UNTIMED_STEPS:
                timed, seconds = timed + 1, seconds + time.perf_counter() - t0
                if timed >= TIMED_STEPS and seconds >= want:
                    break
    return seconds / timed


def plan_steps(step, phases, overhead_seconds, budget_minutes: float, clock_start: float) -> Plan:
    """The step count that ends the run within budget_minutes of clock_start (time.monotonic()).
    step(batch): one training step on a copy of the run's model and optimizer; phases: [(share of
    the steps, batches)], batches() the first epoch's batches of that phase's data;
    overhead_seconds() -> (seconds of evaluation a step on average, seconds of the final report)."""
    budget = 60.0 * budget_minutes
    step_s = sum(share * time_steps(step, batches, budget) for share, batches in phases)
    eval_s, final_s = overhead_seconds()
    spent = time.monotonic() - clock_start
    left = budget * (1 - MARGIN) - spent - final_s
    steps = int(left // (step_s + eval_s)) if left > 0 else 0
    if steps < 1:
        need = (spent + final_s + step_s + eval_s) / (1 - MARGIN) / 60
        raise NpbertError(f"--budget {budget_minutes:g} leaves no time for one step: {spent:.1f} s went before "
                          f"training, a step takes {step_s:.2f} s and the final evaluation {final_s:.1f} s here "
                          f"(at least --budget {need:.2f} minutes)")
    return Plan(steps, step_s, eval_s, spent)


class BudgetClock:
    """The budget as a run spends it, across invocations (spent_before: what earlier ones used)."""

    def __init__(self, minutes: float, spent_before: float = 0.0):
        self.minutes, self.spent_before, self.t0 = minutes, spent_before, time.monotonic()

    def spent(self) -> float:
        return self.spent_before + time.monotonic() - self.t0

    def left(self) -> str:
        """ "12:34 of 60:00 left", for a progress line."""
        return f"{format_eta(max(0.0, 60.0 * self.minutes - self.spent()))} of {format_eta(60.0 * self.minutes)} left"
