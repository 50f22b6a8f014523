"""The run directory of a training command (--out): what npbert may write there, and how
--overwrite replaces an earlier run without ever losing it to a failure or a typo.

    OUT/npbert_run.json   the marker: this directory is an npbert run (kind, when it was made)
    OUT/checkpoint/       the last saved training checkpoint, for --resume
    OUT/metrics.jsonl     the log; pretraining adds OUT/data/, fine-tuning OUT/best/

A new run may go into a directory that is missing, empty, or an npbert run that never saved a
checkpoint (a first run that failed: its retry takes it over). A run that saved is refused
unless --resume continues it or --overwrite replaces it; anything else is refused outright,
--overwrite or not: npbert deletes only what it made.

--overwrite renames the old run aside to the hidden sibling `.OUT.replaced-<pid>-<hex>`
(nothing copied, nothing deleted yet) and puts it back if the new run fails before its first
save; that save deletes it. A run killed in between leaves it there, and the next command on
OUT puts it back (recover_replaced).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import time

from npbert.atomic import check_dir_path, leftovers, pid_alive, recover_dir, sibling
from npbert.errors import NpbertError

MARKER = "npbert_run.json"
REPLACED = "replaced"                     # the kind of sibling() an overwritten run is moved to
CHECKPOINT_DIR, METRICS_FILE = "checkpoint", "metrics.jsonl"
TRAINING_STATE = os.path.join(CHECKPOINT_DIR, "training_state.json")


def is_run(path) -> bool:
    """An npbert run directory: it has the marker, or (made before the marker existed) a
    metrics log or a training checkpoint."""
    return any(os.path.exists(os.path.join(path, f)) for f in (MARKER, METRICS_FILE, TRAINING_STATE))


def has_saved(path) -> bool:
    """The run has saved a checkpoint (or a save of one was interrupted and can be put back)."""
    ckpt = os.path.join(path, CHECKPOINT_DIR)
    return os.path.isdir(ckpt) or any(kind == "old" for kind, _, _ in leftovers(ckpt))


def takes_a_new_run(path) -> bool:
    """A new run may go into path without --overwrite: it is missing, empty, or an npbert run
    that never saved (a failed first run, taken over by its retry)."""
    if not os.path.exists(path):
        return True
    return os.path.isdir(path) and (not os.listdir(path) or (is_run(path) and not has_saved(path)))


def free_run_dir(path) -> str:
    """path if a new run may go there without --overwrite, else the first of path-2, path-3, ..."""
    candidate, n = path, 1
    while not takes_a_new_run(candidate):
        n += 1
        candidate = f"{path}-{n}"
    return candidate


def check_out(path, resume: bool, overwrite: bool) -> None:
    """Refuse what must not happen in `path`, before anything is read or written anywhere."""
    if resume and overwrite:
        raise NpbertError("--resume and --overwrite contradict each other: --resume continues the run in "
                          f"{path}, --overwrite replaces it with a new one; pass one of them")
    check_dir_path(path)
    recover_replaced(path)
    exists = os.path.isdir(path) and bool(os.listdir(path))
    if resume:
        if not exists or not is_run(path):
            raise NpbertError(f"nothing to resume: {path} holds no npbert run")
        if not has_saved(path):
            raise NpbertError(f"nothing to resume: the run in {path} stopped before it saved a checkpoint; "
                              "run the same command again without --resume to start it over")
        return
    if not exists:
        return
    if not is_run(path):
        raise NpbertError(f"{path} is not empty and is not an npbert run (no {MARKER}, {METRICS_FILE} or "
                          f"{CHECKPOINT_DIR}/); npbert will not write into it or delete it: choose another --out")
    if has_saved(path) and not overwrite:
        raise NpbertError(f"output directory {path} already exists; pass --resume to continue that run "
                          "or --overwrite to start again there")


@contextlib.contextmanager
def open_run(path, kind: str, resume: bool, overwrite: bool, log):
    """Make `path` ready for a run (after check_out); yields a RunDir whose saved() must be
    called after each checkpoint save. With --overwrite the old run is moved aside, and put
    back if the block fails before the first save."""
    aside = None
    if not resume and overwrite and os.path.isdir(path) and has_saved(path):
        aside = sibling(path, REPLACED)
        os.rename(path, aside)
        log(f"--overwrite: moved the earlier run in {path} aside; it is deleted at this run's first save")
    made = not os.path.isdir(path)
    os.makedirs(path, exist_ok=True)
    run = RunDir(path, aside)
    if not resume or not os.path.exists(run.file(MARKER)):
        run.write_marker(kind)
    try:
        yield run
    except BaseException:
        if run.aside is not None:                       # never saved: the earlier run comes back
            shutil.rmtree(path)
            os.rename(run.aside, path)
            log(f"the earlier run in {path} is back as it was")
        elif os.listdir(path) == [MARKER]:              # nothing of this run to keep
            shutil.rmtree(path) if made else os.remove(run.file(MARKER))
        raise


class RunDir:
    def __init__(self, path, aside=None):
        self.path, self.aside = path, aside

    def file(self, name) -> str:
        return os.path.join(self.path, name)

    def write_marker(self, kind: str) -> None:
        with open(self.file(MARKER), "w", encoding="utf-8") as f:
            json.dump(dict(kind=kind, created=time.strftime("%Y-%m-%dT%H:%M:%S%z")), f)
            f.write("\n")

    def saved(self) -> None:
        """A checkpoint of this run is on disk: the run it replaced can go."""
        if self.aside is not None:
            shutil.rmtree(self.aside)
            self.aside = None


def recover_replaced(path) -> None:
    """After a kill: an earlier run moved aside by --overwrite comes back if the new run never
    saved, and goes if it did. Checkpoint swaps cut short in OUT are undone too."""
    for _, aside, pid in leftovers(path, (REPLACED,)):
        if pid_alive(pid):
            continue
        if os.path.isdir(path) and is_run(path) and has_saved(path):
            shutil.rmtree(aside)                        # the new run saved: the old one was to go
        elif not os.path.exists(path) or is_run(path):
            if os.path.exists(path):
                shutil.rmtree(path)                     # the new run, which never saved
            os.rename(aside, path)
        else:
            raise NpbertError(f"{aside} holds the run that was in {path} before an interrupted --overwrite, "
                              f"and {path} now holds something else; move one of them")
    if os.path.isdir(path):
        recover_dir(os.path.join(path, CHECKPOINT_DIR))
