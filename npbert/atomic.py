"""Writes that a crash cannot half-do: the new file or directory is built under a hidden name
beside the real one, flushed to disk, then renamed over it in one step. A reader sees the old
contents or all of the new ones, never a mixture, and nothing a user saved is lost.

A process killed during a directory swap leaves hidden siblings behind (`.NAME.tmp-<pid>-<hex>`:
a new copy, maybe half-written; `.NAME.old-<pid>-<hex>`: the previous one); recover_dir puts
the directory back from them, and every successful swap removes those of dead processes.
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil

from npbert.errors import NpbertError


def atomic_replace_dir(directory, fill) -> None:
    """Build a new directory with fill(tmp) beside `directory`, flush it to disk, then swap it in:
    rename the old one away, rename the new one in, delete the old one. Until the swap, the
    previous directory is untouched; if the swap fails, the old one is put back."""
    parent = os.path.dirname(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    tmp = sibling(directory, "tmp")
    os.mkdir(tmp)
    try:
        fill(tmp)
        for entry in os.listdir(tmp):
            _fsync(os.path.join(tmp, entry))
        _fsync(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = sibling(directory, "old") if os.path.isdir(directory) else None
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
    remove_leftovers(directory)


def recover_dir(directory) -> str | None:
    """Undo what a process killed in the middle of atomic_replace_dir left: if `directory` is
    missing but its previous version was renamed aside (`.NAME.old-*`), rename the newest such
    back; then remove the leftovers of dead processes. Returns what was restored, or None.

    Every state a kill can leave is covered: during fill (a partial .tmp, the directory intact),
    between the two renames (.old + a complete .tmp, no directory: the .old is put back, the
    save is lost but the one before is not), after them (the new directory + an .old being
    deleted)."""
    restored = None
    if not os.path.lexists(directory):
        olds = [path for kind, path, _ in leftovers(directory) if kind == "old"]
        if olds:
            restored = max(olds, key=os.path.getmtime)
            os.rename(restored, directory)
            _fsync(os.path.dirname(os.path.abspath(directory)))
    remove_leftovers(directory)
    return restored


def remove_leftovers(directory) -> list:
    """Delete the .tmp-/.old- siblings of `directory` left by processes that are no longer
    running (a live one may be saving right now); returns their paths."""
    removed = []
    for _, path, pid in leftovers(directory):
        if pid != os.getpid() and not pid_alive(pid):
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.remove(path)
            removed.append(path)
    return removed


def leftovers(directory, kinds=("tmp", "old")) -> list:
    """[(kind, path, pid)] of the hidden siblings of `directory` made by sibling(): by default
    those of atomic_replace_dir and atomic_write."""
    parent, name = os.path.split(os.path.abspath(directory))
    pattern = re.compile(rf"\.{re.escape(name)}\.({'|'.join(map(re.escape, kinds))})-(\d+)-[0-9a-f]{{8}}")
    found = []
    for entry in sorted(os.listdir(parent)) if os.path.isdir(parent) else ():
        m = pattern.fullmatch(entry)
        if m:
            found.append((m.group(1), os.path.join(parent, entry), int(m.group(2))))
    return found


def pid_alive(pid: int) -> bool:
    """A process with this id is running (ours, or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:                            # someone else's process: alive
        return True
    return True


def check_dir_path(directory) -> None:
    """NpbertError unless `directory` is a directory or can be made one: no file in the way, at
    it or above it (checked before anything is read or written, not as a NotADirectoryError
    half-way through)."""
    path = os.path.abspath(directory)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    if os.path.isdir(path):
        check_sibling_names(directory, path)
        return
    if path == os.path.abspath(directory):
        raise NpbertError(f"output directory {directory} is an existing file, not a directory")
    raise NpbertError(f"output directory {directory} cannot be made: {path} is a file")


# The longest hidden name npbert makes beside a directory NAME, `.NAME.replaced-<pid>-<hex>` (a run
# set aside by --overwrite; the lock is .NAME.lock): 27 characters more, a PID having at most 7 digits.
SIBLING_EXTRA = len("..replaced--") + 7 + 8


def check_sibling_names(directory, existing) -> None:
    """NpbertError if the hidden names made beside `directory` (its lock, its replaced or
    half-written copies) would exceed the file system's longest name (255 on most): refused now,
    not as an OSError half-way through. existing: the nearest existing directory above it."""
    try:
        name_max = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):      # not reported (or not POSIX): the common 255
        name_max = 255
    for name in {os.path.basename(os.path.abspath(directory)), os.path.basename(os.path.realpath(directory))}:
        if len(name.encode()) + SIBLING_EXTRA > name_max:
            raise NpbertError(f"output directory name {name[:40]}... is {len(name.encode())} bytes long: npbert keeps "
                              f"hidden files beside it (.NAME.lock, .NAME.replaced-...) up to {SIBLING_EXTRA} bytes "
                              f"longer, and this file system takes names of at most {name_max}; choose a shorter name")


def atomic_write(path, write) -> None:
    """write(f) fills a binary file that then replaces `path`."""
    parent = os.path.dirname(os.path.abspath(path))
    tmp = sibling(path, "tmp")
    try:
        with open(tmp, "xb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        if isinstance(e, OSError) and e.errno is not None and e.filename in (tmp, None):
            e.filename = path                          # the file the user named, not the hidden one (or none: ENOSPC)
        raise
    _fsync(parent)


def sibling(path, kind) -> str:
    """A hidden name beside `path`, `.NAME.KIND-<pid>-<hex>`: unique per call, in the same
    directory so that a rename stays on one file system, and carrying the process that made it
    (leftovers() finds them; checkpoint.load_pretrained looks for an ".old-" one)."""
    parent, name = os.path.split(os.path.abspath(path))
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


def file_sha256(path) -> str:
    """The file's SHA-256 in hex, read a MiB at a time (a checkpoint's weights can be GBs)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def path_sha256(path) -> str:
    """A file's SHA-256; for a directory, the SHA-256 of its visible files' names and digests
    (the files directly in it, as a corpus directory or a prepared-data directory holds them)."""
    if not os.path.isdir(path):
        return file_sha256(path)
    digest = hashlib.sha256()
    for entry in sorted(os.listdir(path)):
        full = os.path.join(path, entry)
        if not entry.startswith(".") and os.path.isfile(full):
            digest.update(f"{entry}\0{file_sha256(full)}\n".encode())
    return digest.hexdigest()
