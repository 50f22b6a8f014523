"""The files a command writes (--json, --scores, --plot, plot's --out, predict's --output), one rule
for all, checked by check_outputs before any work is done:

    a path is written when nothing is there, or when it holds what npbert wrote there before,
    recognisably (a PNG with npbert's Software mark, JSON whose first object has the fields of
    that output, text whose every line is one npbert prints there): a re-run replaces its own
    result and nothing a user made. Never a directory or a special file (a FIFO would block the
    check, a device is not a file to replace), never a file the same command reads (or one inside
    a directory it reads), never one file for two outputs, never in a directory where no file can
    be made (a read-only file system: found before the work, not after it).

Writing is npbert/atomic.py's atomic_write: a crash leaves the old file or all of the new one.
"""
from __future__ import annotations

import json
import os
import re
import stat
from typing import Callable, NamedTuple

from npbert.atomic import sibling
from npbert.errors import NpbertError
from npbert.reading import file_kind

HEAD_BYTES = 1 << 20          # an output is recognised by its start: npbert's JSON outputs are a few kB to a MB


class Output(NamedTuple):
    option: str               # how the user named it: "--scores"
    path: str
    ours: Callable            # the first HEAD_BYTES of an existing regular file -> whether npbert wrote it here
    made: str = "written"     # what npbert did to it, for the message: "written", "drawn"


def json_output(option: str, path, fields) -> Output:
    """A JSON or JSON-lines output whose first object has every one of `fields`."""
    return Output(option, path, lambda head: set(fields) <= set(first_object(head)))


def text_output(option: str, path, line: str) -> Output:
    """A text output of lines each matching the regular expression `line` (the whole line)."""
    pattern = re.compile(line)
    return Output(option, path, lambda head: every_line_matches(head, pattern))


def every_line_matches(head: bytes, pattern) -> bool:
    """head holds at least one line, every line matches, and it ends as npbert ends a file: with a
    newline (or cut by HEAD_BYTES, the cut line then not judged)."""
    *lines, last = head.split(b"\n")
    if last and len(head) < HEAD_BYTES:
        return False
    try:
        return bool(lines) and all(pattern.fullmatch(line.decode("utf-8")) for line in lines)
    except UnicodeDecodeError:
        return False


def first_object(head: bytes) -> dict:
    """The first JSON object of a file's start (a JSON file's whole object, a JSON-lines file's
    first line), or {} when it does not start with one."""
    try:
        value, _ = json.JSONDecoder().raw_decode(head.decode("utf-8", errors="replace").lstrip())
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def check_outputs(outputs, inputs=()) -> None:
    """NpbertError for the first output (an Output; a None path is one not asked for) that the
    rule above refuses. inputs: the files and directories the command reads."""
    outputs = [o for o in outputs if o.path]
    for output in outputs:
        check_output(output, inputs)
    seen = {}
    for output in outputs:
        other = seen.setdefault(os.path.realpath(output.path), output)
        if other is not output:
            raise NpbertError(f"{other.option} and {output.option} are the same file, {output.path}: one would "
                              "replace the other; give each its own")


def check_output(output: Output, inputs) -> None:
    path, option = output.path, output.option
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise NpbertError(f"cannot write {option} {path}: the directory {parent} does not exist")
    read = next((i for i in inputs if i and is_within(path, i)), None)
    if read is not None:
        raise NpbertError(f"cannot write {option} {path}: the command reads {read}; write elsewhere")
    check_writable(parent, option, path)
    try:
        mode = os.stat(path).st_mode                   # a link is followed: to a device, it is refused
    except FileNotFoundError:
        return                                         # new (or a dangling link): nothing is lost
    except OSError as e:
        raise NpbertError(f"cannot write {option} {path}: {e.strerror}") from None
    if not stat.S_ISREG(mode):
        raise NpbertError(f"cannot write {option} {path}: it is {file_kind(mode)}, not a regular file")
    try:
        ours = output.ours(head(path))
    except OSError as e:                               # unreadable: npbert cannot tell it is its own
        raise NpbertError(f"cannot write {option} {path}: it cannot be read ({e.strerror})") from None
    if not ours:
        raise NpbertError(f"{option} {path} exists and was not {output.made} by npbert: not overwritten (move it, "
                          "or write elsewhere)")


def check_writable(parent, option, path) -> None:
    """Make and remove the hidden file atomic_write would build the output in: a read-only file
    system or a directory without write permission is found now, not after the work."""
    probe = sibling(path, "tmp")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except OSError as e:
        raise NpbertError(f"cannot write {option} {path}: no file can be made in {parent} ({e.strerror})") from None
    os.remove(probe)


def is_within(path, read) -> bool:
    """path is the file `read`, or lies inside the directory `read` (links resolved)."""
    path, read = os.path.realpath(path), os.path.realpath(read)
    return path == read or (os.path.isdir(read) and path.startswith(read.rstrip(os.sep) + os.sep))


def head(path) -> bytes:
    """The first HEAD_BYTES of a regular file, opened without blocking (were it swapped for a FIFO
    since it was checked, it reads as empty instead of waiting for a writer)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, HEAD_BYTES)
    finally:
        os.close(fd)
