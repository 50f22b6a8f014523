"""SIGTERM ends a command as Ctrl-C does: a service manager's stop, `kill PID` or `timeout` gets a
training run's resumable checkpoint and every other command's cleanup (the lock released, a
half-made directory removed), not the end of `kill -9`.

Terminated is a KeyboardInterrupt, so every path that cleans up after Ctrl-C cleans up after it;
npbert.cli says "terminated" and exits 128 + 15 = 143, as a shell reports a process it ended.
Inside training, npbert/training/interrupt.py takes both signals: the first one finishes the step
and saves."""
from __future__ import annotations

import contextlib
import signal


class Terminated(KeyboardInterrupt):
    """A SIGTERM, raised where the program was (as Python raises KeyboardInterrupt for SIGINT)."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


def raise_terminated(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def terminated_as_interrupt():
    """SIGTERM raises Terminated inside the block (the main thread only; elsewhere, nothing changes)."""
    try:
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:                                 # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
