"""Ctrl-C during training: the first one stops the run after the current step (which then
saves a resumable checkpoint), a second one interrupts at once."""
from __future__ import annotations

import signal


class StopOnInterrupt:
    """Inside `with StopOnInterrupt() as stop:` the first Ctrl-C sets stop.requested (the loop
    saves and exits after the current step); a second Ctrl-C interrupts at once."""

    def __init__(self):
        self.requested = False

    def __enter__(self):
        self._previous = signal.getsignal(signal.SIGINT)

        def handler(signum, frame):
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True
            print("\ninterrupt: finishing this step, then saving a resumable checkpoint (Ctrl-C again to abort)",
                  flush=True)
        try:
            signal.signal(signal.SIGINT, handler)
        except ValueError:                  # not the main thread: leave Ctrl-C as it is
            self._previous = None
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False
