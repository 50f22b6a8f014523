"""A warning when a held-out loss keeps rising while training goes on: the model is memorising
its training data (a corpus too small for the number of steps), and more steps make it worse."""
from __future__ import annotations

PATIENCE = 3          # rises in a row: one or two are noise between evaluations
MIN_RISE = 0.01       # and 1 % above the lowest: at the end of a schedule, with the learning rate near
                      # 0, the loss moves by a thousandth either way, and that is not memorising


class RisingLossWatch:
    def __init__(self, history=None, patience: int = PATIENCE):
        self.history = [tuple(h) for h in history or ()]   # [(step, loss)], saved in the checkpoint
        self.patience = patience

    def add(self, step: int, loss: float) -> str | None:
        """Record an evaluation; returns a warning the first time the loss has risen at
        `patience` evaluations in a row, else None."""
        self.history.append((step, float(loss)))
        last = len(self.history) - 1
        if not self._warns_at(last) or any(self._warns_at(i) for i in range(last)):
            return None
        best_step, best = min(self.history, key=lambda h: h[1])
        return (f"the held-out loss has risen at {self.patience} evaluations in a row (lowest {best:.3f} at step "
                f"{best_step}, now {self.history[-1][1]:.3f}): the model is memorising its training data")

    def _warns_at(self, i: int) -> bool:
        """Evaluation i ends `patience` rises in a row to MIN_RISE above the lowest loss so far."""
        lowest = min(v for _, v in self.history[:i + 1])
        return self._rising_until(i) and self.history[i][1] > lowest * (1 + MIN_RISE)

    def _rising_until(self, i: int) -> bool:
        """Evaluation i ends `patience` rises in a row."""
        losses = [v for _, v in self.history[max(0, i - self.patience):i + 1]]
        return len(losses) == self.patience + 1 and all(a < b for a, b in zip(losses, losses[1:]))
