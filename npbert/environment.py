"""The environment variables npbert reads, each parsed one way: unset or empty means its default,
anything else must parse, or an NpbertError names the variable and what it takes (before:
NPBERT_NUM_THREADS=abc was a traceback in the first kernel, NUMBA_NUM_THREADS=0 one at import).

    NPBERT_BACKEND       numpy | numba, any case (default: numpy; the training commands numba)
    NPBERT_NUM_THREADS   an integer >= 1: the kernels' threads, at most the CPUs this process may use
                         (default: those CPUs; more is capped with a note)
    NUMBA_NUM_THREADS    an integer >= 1: Numba's thread pool, read by Numba when it loads
    NUMBA_THREADING_LAYER one of Numba's names (default, safe, threadsafe, forksafe, tbb, omp, workqueue)
    OMP_WAIT_POLICY      active | passive, any case: whether the kernels' idle worker spins (default:
                         passive, set by npbert/kernels/threads.py; GNU OpenMP would print an error
                         for anything else and spin)

npbert.cli checks them before it imports anything that loads Numba. (A layer this machine lacks,
tbb say, is refused at the first parallel loop: npbert/kernels/threads.py. NUMBA_DISABLE_JIT=1
leaves the numba backend nothing to run: npbert/backend.py refuses it.)"""
from __future__ import annotations

import os

from npbert.errors import NpbertError

BACKENDS = ("numpy", "numba")
THREADING_LAYERS = ("default", "safe", "threadsafe", "forksafe", "tbb", "omp", "workqueue")   # Numba's, any case
WAIT_POLICIES = ("active", "passive")                                                    # OpenMP's, any case


def _value(name: str) -> str:
    return os.environ.get(name, "").strip()


def backend_from_environment() -> str | None:
    """NPBERT_BACKEND in lower case, or None when unset or empty."""
    text = _value("NPBERT_BACKEND")
    if not text:
        return None
    if text.lower() not in BACKENDS:
        raise NpbertError(f"NPBERT_BACKEND={text!r} is not a backend; set it to one of {', '.join(BACKENDS)} "
                          "or leave it unset")
    return text.lower()


def threads_from_environment(name: str = "NPBERT_NUM_THREADS") -> int | None:
    """The integer >= 1 in environment variable `name`, or None when unset or empty."""
    text = _value(name)
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise NpbertError(f"{name}={text!r} must be an integer >= 1 (or unset: the CPUs this process may use)")
    return value


def usable_cpus() -> int:
    """The CPUs this process may use (its affinity, which a container or taskset narrows)."""
    return len(os.sched_getaffinity(0))


def thread_ceiling() -> int:
    """The most threads the kernels run: the usable CPUs (threads beyond the cores only take turns
    on them and wait for each other at every loop), or more where NUMBA_NUM_THREADS is set higher
    on purpose (the tests run 4 threads on 2 cores to split work the way 4 cores would)."""
    numba_threads = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    return max(usable_cpus(), int(numba_threads) if numba_threads.isdigit() else 0)


def kernel_threads() -> int:
    """NPBERT_NUM_THREADS up to thread_ceiling(), or the usable CPUs when unset."""
    return min(threads_from_environment("NPBERT_NUM_THREADS") or usable_cpus(), thread_ceiling())


def threads_note() -> str | None:
    """One line when NPBERT_NUM_THREADS asks for more threads than kernel_threads() gives."""
    wanted, ceiling = threads_from_environment("NPBERT_NUM_THREADS"), thread_ceiling()
    if wanted and wanted > ceiling:
        return f"NPBERT_NUM_THREADS={wanted} is more than the {usable_cpus()} CPUs this process may use: the " \
               f"kernels run {ceiling} threads"
    return None


def check_choice(name: str, choices: tuple, what: str) -> None:
    """NpbertError unless the variable is unset, empty or one of `choices` in any case (Numba would
    raise a ValueError for a bad NUMBA_THREADING_LAYER at the first parallel loop, in the middle of
    a run; GNU OpenMP prints an error for a bad OMP_WAIT_POLICY and goes on with its default)."""
    text = _value(name)
    if text and text.lower() not in choices:
        raise NpbertError(f"{name}={text!r} is not {what}; set it to one of {', '.join(choices)} or leave it unset")


def check_environment() -> None:
    """NpbertError naming the first of npbert's environment variables that does not parse."""
    backend_from_environment()
    threads_from_environment("NPBERT_NUM_THREADS")
    threads_from_environment("NUMBA_NUM_THREADS")
    check_choice("NUMBA_THREADING_LAYER", THREADING_LAYERS, "a threading layer of Numba")
    check_choice("OMP_WAIT_POLICY", WAIT_POLICIES, "an OpenMP wait policy")
