"""Real hostile places for the commands the tests run: a directory npbert cannot write, a full
disk, a command running in the background until the test has tried a second one.

A read-only directory is a read-only bind mount in a private mount namespace (EROFS) where one
can be made (root, or an unprivileged user namespace), else chmod 0555 (EACCES). Root ignores a
directory's mode, so as root without mount namespaces there is no mechanism and the test skips.
A full disk is a 256 KiB tmpfs filled up, in a private mount namespace (none: skip). The mounts
live only as long as the command: nothing is left mounted, whatever happens to the test."""
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

import pytest

from support.patience import HANG_SECONDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPBERT = [sys.executable, "-m", "npbert.cli"]
READ_ONLY = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
LIMIT = 3 << 30                                    # a child's address space in npbert(..., memory=LIMIT)
FULL = 'mount -t tmpfs -o size=256k tmpfs "$1" && { cat /dev/zero > "$1/.filler" 2>/dev/null; shift; exec "$@"; }'


def env(**extra) -> dict:
    return dict(os.environ, PYTHONPATH=ROOT, **extra)


def npbert(*argv, memory=None, **kw) -> subprocess.CompletedProcess:
    """`npbert ARGV` in a subprocess (this checkout's npbert), output captured; memory: a limit on
    its address space, so that a regression reading or allocating without bound is a MemoryError
    in the child, not the OOM killer on the machine."""
    limit = (lambda: resource.setrlimit(resource.RLIMIT_AS, (memory, memory))) if memory else None
    return subprocess.run([*NPBERT, *argv], capture_output=True, text=True, env=kw.pop("env", env()),
                          timeout=HANG_SECONDS, preexec_fn=limit, **kw)


@functools.lru_cache(maxsize=None)
def unshare_flags(probe_dir) -> tuple | None:
    """The `unshare` flags that give a private mount namespace where a bind mount can be remounted
    read-only, or None."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return None
    for flags in (("-m",), ("-r", "-m")):
        probe = subprocess.run(["unshare", *flags, "sh", "-c", READ_ONLY, "sh", probe_dir, "true"],
                               capture_output=True, timeout=HANG_SECONDS)
        if probe.returncode == 0:
            return flags
    return None


def run_unwritable(directory, argv) -> tuple:
    """(CompletedProcess of argv, the errno name expected) with `directory` unwritable to it."""
    flags = unshare_flags(str(directory))
    if flags is not None:
        proc = subprocess.run(["unshare", *flags, "sh", "-c", READ_ONLY, "sh", str(directory), *argv],
                              capture_output=True, text=True, env=env(), timeout=HANG_SECONDS)
        return proc, "Read-only file system"
    if os.geteuid() == 0:
        pytest.skip("root without a mount namespace: no way to make a directory it cannot write")
    os.chmod(directory, 0o555)
    try:
        return subprocess.run(argv, capture_output=True, text=True, env=env(), timeout=HANG_SECONDS), \
            "Permission denied"
    finally:
        os.chmod(directory, 0o755)


def run_on_full_disk(directory, argv) -> subprocess.CompletedProcess:
    """argv with a full 256 KiB file system mounted on `directory` (empty), in its own mount namespace."""
    flags = unshare_flags(str(directory))
    if flags is None:
        pytest.skip("no private mount namespace here: no full file system to write to")
    return subprocess.run(["unshare", *flags, "sh", "-c", FULL, "sh", str(directory), *argv],
                          capture_output=True, text=True, env=env(), timeout=HANG_SECONDS)


class Background:
    """`npbert ARGV` running until the block ends, then stopped with `stop` (Ctrl-C's SIGINT; None:
    left to finish) and reaped; wait_for(path) waits until it has made `path` (or has ended)."""

    def __init__(self, *argv, stop=signal.SIGINT):
        self.argv, self.stop = argv, stop

    def __enter__(self):
        self.proc = subprocess.Popen([*NPBERT, *self.argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env())
        return self

    def wait_for(self, path) -> None:
        while not os.path.lexists(path) and self.proc.poll() is None:
            time.sleep(0.05)
        assert self.proc.poll() is None, self.said()

    def said(self) -> str:
        return "".join(self.proc.communicate(timeout=HANG_SECONDS)) if self.proc.poll() is not None else ""

    def __exit__(self, *exc):
        if self.stop is not None and self.proc.poll() is None:
            self.proc.send_signal(self.stop)
        self.out, self.err = self.proc.communicate(timeout=HANG_SECONDS)
        self.returncode = self.proc.returncode
        return False
