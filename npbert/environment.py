"""The environment variables npbert reads, each parsed one way: unset or empty means its default,
anything else must parse, or an NpbertError names the variable and what it takes (before:
NPBERT_NUM_THREADS=abc was a traceback in the first kernel, NUMBA_NUM_THREADS=0 one at import).

    NPBERT_BACKEND       numpy | numba, any case (default: numpy; the training commands numba)
    NPBERT_NUM_THREADS   an integer >= 1: the kernels' threads (default: the CPUs this process may use)
    NUMBA_NUM_THREADS    an integer >= 1: Numba's thread pool, read by Numba when it loads

npbert.cli checks all three before it imports anything that loads Numba."""
from __future__ import annotations

import os

from npbert.errors import NpbertError

BACKENDS = ("numpy", "numba")


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


def check_environment() -> None:
    """NpbertError naming the first of npbert's environment variables that does not parse."""
    backend_from_environment()
    threads_from_environment("NPBERT_NUM_THREADS")
    threads_from_environment("NUMBA_NUM_THREADS")
