"""What a training run tells its user as it goes: progress lines, tokens per second, the ETA,
and the averages of its step metrics over the steps since the last line."""
from __future__ import annotations

import time


def say(message: str) -> None:
    """Print a progress line now, even when stdout is a file or a pipe (which Python buffers)."""
    print(message, flush=True)


class RunningMeans:
    """Averages of each step's metrics over the steps since the last pop(). Saved in the
    checkpoint (to_json), so a resumed run's next line averages the same steps as an
    uninterrupted run's."""

    def __init__(self, sums=None, n=0):
        self.sums, self.n = dict(sums or {}), int(n)

    def add(self, metrics: dict) -> None:
        for k, v in metrics.items():
            self.sums[k] = self.sums.get(k, 0.0) + v
        self.n += 1

    def pop(self) -> dict:
        means = {k: v / max(self.n, 1) for k, v in self.sums.items()}
        self.sums, self.n = {}, 0
        return means

    def to_json(self) -> dict:
        return dict(sums=self.sums, n=self.n)

    @classmethod
    def from_json(cls, d) -> "RunningMeans":
        return cls(**d) if isinstance(d, dict) else cls()


class Throughput:
    """Tokens per second and ETA over the steps since the last report. A process's first step
    compiles or loads the kernels (25 minutes of "ETA" for a 4-minute run), so it is kept out
    of the window: a line whose window holds that step alone has its rate and no ETA."""

    def __init__(self):
        self.t0, self.tokens, self.steps = time.perf_counter(), 0, 0
        self.warm = False                              # the first step is behind us
        self.first_step = None                         # (seconds, tokens) until the next report

    def add(self, tokens: int) -> None:
        if not self.warm:
            self.warm, self.first_step = True, (time.perf_counter() - self.t0, tokens)
            self.t0 = time.perf_counter()              # the window starts after it
            return
        self.tokens += tokens
        self.steps += 1

    def exclude(self, seconds: float) -> None:
        """Leave out time spent on something else (an evaluation, a save) from the current window."""
        self.t0 += seconds

    def report(self, steps_left: int):
        """-> (tokens per second, ETA in seconds, or None after the first step alone)."""
        first, self.first_step = self.first_step, None
        if self.steps == 0 and first is not None:
            self.t0 = time.perf_counter()
            return first[1] / max(first[0], 1e-9), (None if steps_left else 0.0)
        dt = max(time.perf_counter() - self.t0, 1e-9)
        tokens_per_s, eta = self.tokens / dt, steps_left * dt / max(self.steps, 1)
        self.t0, self.tokens, self.steps = time.perf_counter(), 0, 0
        return tokens_per_s, eta


def format_eta(seconds: float | None) -> str:
    if seconds is None:                                # nothing timed but the first step
        return "-:-- (first step, warming up)"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"
