"""Writes that a crash cannot half-do: the new file or directory is built under a hidden name
beside the real one, flushed to disk, then renamed over it in one step. A reader sees the old
contents or all of the new ones, never a mixture, and nothing a user saved is lost."""
from __future__ import annotations

import os
import secrets
import shutil


def atomic_replace_dir(directory, fill) -> None:
    """Build a new directory with fill(tmp) beside `directory`, flush it to disk, then swap it in:
    rename the old one away, rename the new one in, delete the old one. Until the swap, the
    previous directory is untouched; if the swap fails, the old one is put back."""
    parent, name = os.path.split(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    tmp = _sibling(parent, name, "tmp")
    os.mkdir(tmp)
    try:
        fill(tmp)
        for entry in os.listdir(tmp):
            _fsync(os.path.join(tmp, entry))
        _fsync(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = _sibling(parent, name, "old") if os.path.isdir(directory) else None
    if old:
        os.rename(directory, old)
    try:
        os.rename(tmp, directory)
    except BaseException:
        if old:
            os.rename(old, directory)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync(parent)
    if old:
        shutil.rmtree(old)


def atomic_write(path, write) -> None:
    """write(f) fills a binary file that then replaces `path`."""
    parent, name = os.path.split(os.path.abspath(path))
    tmp = _sibling(parent, name, "tmp")
    try:
        with open(tmp, "xb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    _fsync(parent)


def _sibling(parent, name, kind) -> str:
    # hidden, unique per save, and in the same directory so that rename stays on one file system
    # (checkpoint.load_pretrained looks for an ".old-" one left by a crash mid-swap)
    return os.path.join(parent, f".{name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}")


def _fsync(path) -> None:
    """Flush a file or directory to disk (directories only where the OS allows it)."""
    if os.path.isdir(path) and os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
