"""One writer per run directory: `.OUT.lock` beside OUT, held with an exclusive flock by the one
process that trains there and recording its PID.

The kernel releases a flock when its holder exits, however it exits, so a `kill -9` cannot
leave a run locked: the next command takes the lock over. The PID in the file is only for the
message to a second writer. The file sits beside OUT, not in it, because --overwrite renames
OUT aside while the lock is held; it is removed on release (and a process that locked a file
removed under it tries again, so two processes never both believe they hold the lock).
"""
from __future__ import annotations

import contextlib
import os

from npbert.errors import NpbertError

try:
    import fcntl
except ImportError:                                    # not POSIX: no lock (documented in docs/pretraining.md)
    fcntl = None


def lock_path(out) -> str:
    parent, name = os.path.split(os.path.abspath(out))
    return os.path.join(parent, f".{name}.lock")


@contextlib.contextmanager
def run_lock(out):
    """Hold the lock of run directory `out` for the block; NpbertError naming the holder if
    another live process holds it."""
    if fcntl is None:
        yield
        return
    path = lock_path(out)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = _acquire(path, out)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)
        os.close(fd)                                   # after the remove: a waiter re-checks the inode


def _acquire(path, out) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            raise NpbertError(f"{out} is in use by another npbert process{f' (PID {holder})' if holder else ''}: "
                              "one run directory takes one writer at a time; wait for it to finish, or "
                              "choose another --out") from None
        if _same_file(fd, path):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)                                   # locked a file its holder removed: try again


def _same_file(fd, path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _read(fd) -> str:
    try:
        return os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
