"""Ctrl-C or SIGTERM during training: the first one stops the run after the current step (which
then saves a resumable checkpoint), a second one interrupts at once."""
from __future__ import annotations

import signal

from npbert.signals import Terminated

STOP_SIGNALS = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


class StopOnInterrupt:
    """Inside `with StopOnInterrupt() as stop:` the first Ctrl-C or SIGTERM sets stop.requested to
    its signal number (the loop saves and exits after the current step); a second one interrupts
    at once (KeyboardInterrupt, or Terminated for SIGTERM)."""

    def __init__(self):
        self.requested = None
        self._previous = {}

    def __enter__(self):
        def handler(signum, frame):
            if self.requested:
                raise Terminated(signum) if signum != signal.SIGINT else KeyboardInterrupt
            self.requested = signum
            print(f"\n{STOP_SIGNALS[signum]}: finishing this step, then saving a resumable checkpoint "
                  f"({STOP_SIGNALS[signum]} again to abort)", flush=True)
        try:
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, handler)
        except ValueError:                  # not the main thread: leave the signals as they are
            self._previous = {}
        return self

    def __exit__(self, *exc):
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        return False
