"""What a run reads, pinned: its paths made absolute when it starts (so a --resume from another
directory reads the same files, not whatever a relative path names there) and the SHA-256 of
their contents recorded in the checkpoint (so a --resume on data that changed is refused, not
trained on: the run would no longer be the one that was stopped).
"""
from __future__ import annotations

import dataclasses
import os

from npbert.atomic import path_sha256
from npbert.errors import NpbertError
from npbert.reading import regular_file

INPUTS = "inputs"                                     # the key in the checkpoint's extra


def absolute_paths(opts, names):
    """opts with each of `names` that names something on disk as an absolute path."""
    found = {n: os.path.abspath(getattr(opts, n)) for n in names
             if isinstance(getattr(opts, n), str) and os.path.exists(getattr(opts, n))}
    return dataclasses.replace(opts, **found)


def check_pinnable(paths) -> None:
    """DataError unless each input that exists is a directory or a regular file (checked before it
    is read): a pipe (`--train /dev/stdin`) is empty once read, so the SHA-256 pinned would be an
    empty read's and a --resume would train on other rows; a FIFO or a device blocks or never ends."""
    for path in paths:
        if isinstance(path, str) and os.path.exists(path) and not os.path.isdir(path):   # (a missing one: said later)
            regular_file(path, "training input")


def fingerprint(paths) -> dict:
    """{absolute path: content SHA-256} of the files and directories a run reads."""
    return {os.path.abspath(p): path_sha256(p) for p in paths}


def check_same_inputs(recorded, paths, where) -> None:
    """NpbertError unless every input recorded when the run started is still there, unchanged.
    A checkpoint from before inputs were recorded (recorded None) is not checked."""
    if recorded is None:
        return
    now = set(map(os.path.abspath, paths))
    for path, sha in sorted(recorded.items()):
        if path not in now:
            raise NpbertError(f"the run in {where} was started on {path}, and this --resume would read "
                              f"{', '.join(sorted(now)) or 'nothing'} instead: resume on the data it started with")
        if not os.path.exists(path):
            raise NpbertError(f"the run in {where} was started on {path}, which no longer exists: resume on the "
                              "data it started with")
        if path_sha256(path) != sha:
            raise NpbertError(f"{path} has changed since the run in {where} started on it (SHA-256 {sha[:12]}... "
                              "then, not now): a resumed run must read the same data; restore it, or start a new "
                              "run with --overwrite")
