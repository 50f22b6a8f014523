"""A warning when a held-out loss keeps rising while training goes on: the model is memorising
its training data (a corpus too small for the number of steps), and more steps make it worse."""
from __future__ import annotations

PATIENCE = 3          # rises in a row: one or two are noise between evaluations
MIN_RISE = 0.01       # and 1 % above the lowest: at the end of a schedule, with the learning rate near
                      # 0, the loss moves by a thousandth either way, and that is not memorising


class RisingLossWatch:
    def __init__(self, history=None, patience: int = PATIENCE):
        self.history = []                              # [(step, loss)], saved in the checkpoint
        self.patience = patience
        self.lowest = float("inf")                     # the lowest loss so far
        self.warned = False                            # a resumed run does not warn twice
        for step, loss in history or ():
            self._record(step, loss)

    def add(self, step: int, loss: float) -> str | None:
        """Record an evaluation; returns a warning the first time the loss has risen at `patience`
        evaluations in a row to MIN_RISE above the lowest so far, else None."""
        if not self._record(step, loss):
            return None
        best_step, best = min(self.history, key=lambda h: h[1])
        return (f"the held-out loss has risen at {self.patience} evaluations in a row (lowest {best:.3f} at step "
                f"{best_step}, now {self.history[-1][1]:.3f}): the model is memorising its training data")

    def _record(self, step: int, loss: float) -> bool:
        """Append an evaluation -> whether it is the first to warn (a constant amount of work a call)."""
        loss = float(loss)
        self.history.append((step, loss))
        self.lowest = min(self.lowest, loss)
        recent = [v for _, v in self.history[-self.patience - 1:]]
        rising = len(recent) == self.patience + 1 and all(a < b for a, b in zip(recent, recent[1:]))
        warns = rising and loss > self.lowest * (1 + MIN_RISE)
        first, self.warned = warns and not self.warned, self.warned or warns
        return first
