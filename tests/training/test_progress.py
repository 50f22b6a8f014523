"""What a progress line says about speed: the first step (compiling or loading the kernels)
is not taken as the pace of the run."""
from npbert.training import progress
from npbert.training.progress import Throughput, format_eta


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def steps(speed, clock, seconds_each):
    for seconds in seconds_each:
        clock.now += seconds
        speed.add(100)


def timed(monkeypatch):
    """A Throughput reading a clock the test advances (no verdict on the machine's own time)."""
    clock = Clock()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    return clock, Throughput()


def test_the_first_steps_compile_is_left_out_of_the_eta(monkeypatch):
    clock, speed = timed(monkeypatch)
    steps(speed, clock, [60.0] + [1.0] * 9)           # a minute compiling, then a second a step
    tokens_per_s, eta = speed.report(steps_left=90)
    assert (tokens_per_s, eta) == (100.0, 90.0)
    steps(speed, clock, [2.0] * 10)                    # later windows: every step counts
    assert speed.report(steps_left=80) == (50.0, 160.0)


def test_a_line_after_the_first_step_alone_has_its_rate_and_no_eta(monkeypatch):
    clock, speed = timed(monkeypatch)
    steps(speed, clock, [50.0])
    tokens_per_s, eta = speed.report(steps_left=99)
    assert tokens_per_s == 2.0 and eta is None
    assert format_eta(eta) == "-:-- (first step, warming up)"
    steps(speed, clock, [1.0] * 2)
    assert speed.report(steps_left=97) == (100.0, 97.0)


def test_a_one_step_run_ends_with_eta_zero(monkeypatch):
    clock, speed = timed(monkeypatch)
    steps(speed, clock, [5.0])
    assert speed.report(steps_left=0)[1] == 0.0
