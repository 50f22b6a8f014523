"""Reading what a user names, bounded: a file read whole is checked before a byte is read.

    regular_file(path, what)      a file a command reads again later (a corpus, a training run's
                                  task files): a FIFO would block until a writer comes, a device
                                  (/dev/zero) never ends, and a pipe read once is empty the second time
    read_bytes(path, what, limit) the whole file, refused past `limit` bytes: a regular file by its
                                  size before reading, a pipe or device (`--input /dev/stdin`) as it is
                                  read, at the first NUL byte if it must be text (/dev/zero: at once)

Each refusal is a DataError naming the file, never a MemoryError or a process the OOM killer ends.
"""
from __future__ import annotations

import os
import stat

from npbert.errors import DataError

GIB = 1 << 30
TEXT_LIMIT = 2 * GIB          # a corpus file, a task file, predict's input: a 2 GiB text is ~10 GiB as Python strings
VOCAB_LIMIT = 256 << 20       # a vocab.txt: BERT's 30,522 tokens are 230 kB
CHUNK = 1 << 20


def file_kind(mode) -> str:
    return ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def regular_file(path, what, why="npbert reads it whole and again later (to check it is unchanged)") -> None:
    """DataError unless path (a symbolic link is followed) is a regular file; why: what needs it to be."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise DataError(f"{what} not found: {path}") from None
    except OSError as e:
        raise DataError(f"cannot read {what} {path}: {e.strerror}") from None
    if not stat.S_ISREG(mode):
        raise DataError(f"{what} {path} is {file_kind(mode)}, not a regular file: {why}, so save it to a file first")


def read_bytes(path, what, limit: int = TEXT_LIMIT, text: bool = True) -> bytes:
    """The bytes of path; a DataError if there are more than `limit`, or (text) at a NUL byte of a
    stream. Opened without blocking, so a FIFO with no writer is read as empty, not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise DataError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise DataError(f"{what} {path} is a directory, not a file") from None
    except OSError as e:                               # no read permission, a socket, ...
        raise DataError(f"cannot read {what} {path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise DataError(f"{what} {path} is a directory, not a file")
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise DataError(too_large(path, what, limit, f"{st.st_size:,}"))
        os.set_blocking(fd, True)                      # a pipe with a writer: wait for its data
        with os.fdopen(fd, "rb", closefd=False) as f:
            return read_stream(f, path, what, limit, text and not stat.S_ISREG(st.st_mode))
    except OSError as e:
        raise DataError(f"cannot read {what} {path}: {e.strerror}") from None
    finally:
        os.close(fd)


def read_stream(f, source, what, limit: int = TEXT_LIMIT, text: bool = True) -> bytes:
    """At most `limit` bytes of the binary stream f (stdin, a pipe), a DataError past them or (text)
    at the first NUL byte, read a MiB at a time."""
    chunks, size = [], 0
    while True:
        chunk = f.read(min(CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise DataError(too_large(source, what, limit, "more"))
        if text and b"\0" in chunk:
            raise DataError(f"{what} {source} is not text: a NUL byte at offset {size - len(chunk) + chunk.index(0):,}"
                            " (a binary file or a device such as /dev/zero)")
        chunks.append(chunk)


def too_large(source, what, limit, size) -> str:
    return (f"{what} {source} holds {size} bytes, more than the {limit / GIB:g} GiB npbert reads into memory: "
            "split it into smaller files" if limit >= GIB else
            f"{what} {source} holds {size} bytes, more than the {limit >> 20} MiB a {what} can be")
