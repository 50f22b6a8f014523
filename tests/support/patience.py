"""How long a test waits for a subprocess, a thread, a notebook cell or a line before it calls
the thing hung.

A wait here catches a hang, never a slow machine: the whole suite, 7 minutes alone, took 33
minutes beside other CPU-heavy work on a 2-core machine, so every wait is an hour,
which only a hang reaches. No test asserts a duration; speed is measured by the scripts in
benchmarks/ (docs/performance.md)."""
import os
import threading

HANG_SECONDS = 3600


def call_beside_fifos(call, *fifos):
    """call()'s result, with call run in a thread while the named FIFOs are watched: a reader
    blocked on one is released (a writer opens and closes it: the reader sees an empty file), so
    code that reads a FIFO it should have refused gives a wrong answer, not a hang, whatever the
    machine's speed."""
    result = []

    def run():
        try:
            result.append((call(), None))
        except BaseException as e:                         # raised again below, in the test's thread
            result.append((None, e))
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    for _ in range(HANG_SECONDS):
        worker.join(1)
        if not worker.is_alive():
            break
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:                                # ENXIO: nobody is reading it (yet)
                pass
    assert not worker.is_alive(), "the call neither returned nor raised"
    value, error = result[0]
    if error is not None:
        raise error
    return value
