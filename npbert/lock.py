"""One writer per output directory: `.NAME.lock` beside it, held with an exclusive flock by the one
process that writes there (a training run, a preparation) and recording its PID.

The kernel releases a flock when its holder exits, however it exits, so a `kill -9` cannot
leave a directory locked: the next command takes the lock over. The PID in the file is only for
the message to a second writer. The file sits beside the directory, not in it, because
--overwrite renames a run aside while the lock is held; it is removed on release (and a process
that locked a file removed under it tries again, so two processes never both believe they hold
the lock).

The lock is named from the directory's real path, so every spelling of one directory (`R`, `./R/`,
`R/../R`, a symbolic link to R) takes the same lock. The file is opened without following a
link and must be a regular file: a link planted there is never written through. The directory
itself is flocked too while it exists (hold_directory), so a lock file deleted under a running
writer does not let a second one in.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat

from npbert.errors import NpbertError

try:
    import fcntl
except ImportError:                                    # not POSIX: no lock (documented in docs/pretraining.md)
    fcntl = None


def lock_path(out) -> str:
    parent, name = os.path.split(os.path.realpath(out))
    return os.path.join(parent, f".{name}.lock")


class Lock:
    """What run_lock yields: hold_directory() flocks the directory once it exists."""

    def __init__(self, out, path):
        self.out, self.path, self.fds, self.held = out, path, [], set()

    def hold_directory(self) -> None:
        """Flock the directory itself (after making it, or after --overwrite made a new one); a
        directory this lock already holds is left as it is (two flocks of one process conflict)."""
        if fcntl is None or not os.path.isdir(self.out):
            return
        fd = os.open(self.out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        inode = (os.fstat(fd).st_dev, os.fstat(fd).st_ino)
        if inode in self.held:
            os.close(fd)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise in_use(self.out, "") from None
        self.fds.append(fd)
        self.held.add(inode)


@contextlib.contextmanager
def run_lock(out):
    """Hold the lock of output directory `out` for the block; NpbertError naming the holder if
    another live process holds it, or naming what stops the lock file from being made."""
    path = lock_path(out)
    lock = Lock(out, path)
    if fcntl is None:
        yield lock
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        lock.fds.append(_acquire(path, out))
        lock.hold_directory()
    except OSError as e:
        _release(lock)
        raise NpbertError(f"cannot take the lock of {out} ({path}): {e.strerror or e}") from None
    except BaseException:
        _release(lock)
        raise
    try:
        yield lock
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)
        _release(lock)                                 # after the remove: a waiter re-checks the inode


def _release(lock) -> None:
    for fd in lock.fds:
        os.close(fd)
    lock.fds, lock.held = [], set()


def _acquire(path, out) -> int:
    while True:
        fd = _open(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            raise in_use(out, holder) from None
        if _same_file(fd, path):
            try:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
            except BaseException:
                os.close(fd)
                raise
            return fd
        os.close(fd)                                   # locked a file its holder removed: try again


def _open(path) -> int:
    """The lock file, opened without following a link (O_NOFOLLOW) and without blocking on a FIFO;
    NpbertError unless it is a regular file."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NpbertError(f"the lock file {path} is a symbolic link: npbert does not write through it; "
                              "remove the link") from None
        if e.errno == errno.EISDIR:
            raise NpbertError(f"the lock file {path} is a directory: move it away") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NpbertError(f"the lock file {path} is not a regular file (a FIFO, a socket or a device): remove it")
    return fd


def in_use(out, holder) -> NpbertError:
    return NpbertError(f"{out} is in use by another npbert process{f' (PID {holder})' if holder else ''}: "
                       "one directory takes one writer at a time; wait for it to finish, or choose another --out")


def _same_file(fd, path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.lstat(path).st_ino
    except FileNotFoundError:
        return False


def _read(fd) -> str:
    try:
        return os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
