"""The run directory of a training command (--out): what npbert may write there, and how
--overwrite replaces an earlier run without ever losing it to a failure or a typo.

    OUT/npbert_run.json   the marker: this directory is an npbert run (kind, when it was made)
    OUT/checkpoint/       the last saved training checkpoint, for --resume
    OUT/metrics.jsonl     the log; pretraining adds OUT/data/, fine-tuning OUT/best/

A run is a directory carrying the marker, nothing less: a directory holding a metrics.jsonl or
a checkpoint/ of someone else's making is not one. A new run may go into a directory that is
missing, empty, or an npbert run that never saved a checkpoint (a first run that failed: its
retry takes it over). A run that saved is refused unless --resume continues it or --overwrite
replaces it; anything else is refused outright, --overwrite or not: npbert deletes only what it
made. One process writes a run at a time (npbert/lock.py holds the lock around all this).
What a directory holds is read from the disk once, as one of Empty, Run(kind, saved, in_the_way)
or Foreign (inspect), and every decision below is taken on that value: settle undoes what a
killed run left and says what is there then, check_out refuses on it, open_run acts on it.

--overwrite renames the old run aside to the hidden sibling `.OUT.replaced-<pid>-<hex>`
(nothing copied, nothing deleted yet) and puts it back if the new run fails before its first
save; that save deletes it. A run killed in between leaves it there, and the next command on
OUT puts it back (settle).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass

from npbert.atomic import check_dir_path, leftovers, pid_alive, sibling
from npbert.errors import NpbertError

MARKER = "npbert_run.json"
REPLACED = "replaced"                     # the kind of sibling() an overwritten run is moved to
CHECKPOINT_DIR, METRICS_FILE = "checkpoint", "metrics.jsonl"


@dataclass(frozen=True)
class Empty:
    """Nothing there, or an empty directory."""


@dataclass(frozen=True)
class Run:
    """An npbert run (it carries the marker)."""
    kind: str | None                     # the command that made it; None if its marker is unreadable
    saved: bool                          # it saved a checkpoint (has_saved)
    in_the_way: str | None               # OUT/checkpoint is a "link" or a "file", which no save may replace


@dataclass(frozen=True)
class Foreign:
    """Anything else: a file, or a directory with things in it but no marker."""


def inspect(path) -> Empty | Run | Foreign:
    """What path holds, read from the disk once and nothing changed there: free_run_dir asks it
    of directories it does not lock, settle of the one a run has locked."""
    if not os.path.exists(path) or (os.path.isdir(path) and not os.listdir(path)):
        return Empty()
    marker = os.path.join(path, MARKER)
    if not os.path.isfile(marker) or os.path.islink(marker):       # a link to a marker marks nothing
        return Foreign()
    ckpt = os.path.join(path, CHECKPOINT_DIR)
    return Run(marker_kind(marker), has_saved(ckpt), checkpoint_in_the_way(ckpt))


def marker_kind(marker) -> str | None:
    """The command that wrote the marker ("pretrain", "finetune"), None if it cannot be read."""
    try:
        with open(marker, encoding="utf-8") as f:
            kind = json.load(f).get("kind")
    except (OSError, ValueError, AttributeError):
        return None
    return kind if isinstance(kind, str) else None


def has_saved(ckpt) -> bool:
    """A checkpoint was saved: it is there, or a swap of it cut short left the last one aside
    (.checkpoint.old-*), which --resume puts back."""
    return os.path.isdir(ckpt) or any(kind == "old" for kind, _, _ in leftovers(ckpt))


def checkpoint_in_the_way(ckpt) -> str | None:
    """What stands at OUT/checkpoint that no save may replace, "link" or "file" (None: nothing
    does): every save replaces that directory whole, and would fail there after the training."""
    if os.path.islink(ckpt):
        return "link"
    return "file" if os.path.lexists(ckpt) and not os.path.isdir(ckpt) else None


def saved_run(state) -> bool:
    """A run that saved a checkpoint: one --resume continues, and only --overwrite replaces."""
    return isinstance(state, Run) and state.saved


def takes_a_new_run(state) -> bool:
    """A new run may go where `state` was found without --overwrite: nothing, or an npbert run
    that never saved (a failed first run, taken over by its retry)."""
    return isinstance(state, Empty) or (isinstance(state, Run) and not state.saved)


def free_run_dir(path) -> str:
    """path if a new run may go there without --overwrite, else the first of path-2, path-3, ..."""
    candidate, n = path, 1
    while not takes_a_new_run(inspect(candidate)):
        n += 1
        candidate = f"{path}-{n}"
    return candidate


def check_out_flags(path, resume: bool, overwrite: bool) -> None:
    """What can be refused from the command line alone, before the lock is taken."""
    if resume and overwrite:
        raise NpbertError("--resume and --overwrite contradict each other: --resume continues the run in "
                          f"{path}, --overwrite replaces it with a new one; pass one of them")
    check_dir_path(path)
    if overwrite and os.path.islink(path):
        raise NpbertError(f"--out {path} is a symbolic link (to {os.path.realpath(path)}): --overwrite moves and "
                          "deletes the run directory itself, not through a link; pass --out with the real path")
    cwd, real = os.path.realpath(os.getcwd()), os.path.realpath(path)
    if overwrite and (cwd == real or cwd.startswith(real + os.sep)):
        raise NpbertError(f"--overwrite cannot replace {path}: it is (or holds) the current directory; run from "
                          "its parent with --out NAME")


def settle(path) -> Empty | Run | Foreign:
    """Under the run's lock, an --overwrite that a kill cut short is finished first -> what path
    holds then. The earlier run it moved aside comes back if the new run never saved, and goes if
    it did. (A checkpoint swap cut short is the checkpoint's own: --resume puts it back as it
    loads it, and inspect counts it as saved meanwhile.)"""
    state = inspect(path)
    for _, aside, pid in leftovers(path, (REPLACED,)):
        if pid_alive(pid):
            continue
        if isinstance(state, Foreign):
            raise NpbertError(f"{aside} holds the run that was in {path} before an interrupted --overwrite, "
                              f"and {path} now holds something else; move one of them")
        if saved_run(state):
            shutil.rmtree(aside)                        # the new run saved: the old one was to go
            continue
        # the new run never saved (empty: killed between making its directory and writing its marker)
        if os.path.exists(path):
            shutil.rmtree(path)
        os.rename(aside, path)
        state = inspect(path)                           # the earlier run, back as it was
    return state


def check_out(path, state: Empty | Run | Foreign, resume: bool, overwrite: bool, kind: str) -> None:
    """Refuse what must not happen in `path`, which holds `state` (settle's), before anything is
    read or written there."""
    if isinstance(state, Foreign):
        raise NpbertError(f"{path} is not empty and is not an npbert run (it has no {MARKER}); npbert will not "
                          "write into it or delete it: choose another --out")
    ckpt = os.path.join(path, CHECKPOINT_DIR)
    if isinstance(state, Run) and state.in_the_way == "link":
        raise NpbertError(f"{ckpt} is a symbolic link; every save replaces that directory, and npbert does not "
                          "replace through a link: move the checkpoint into the run directory")
    if isinstance(state, Run) and state.in_the_way == "file":
        raise NpbertError(f"{ckpt} is a file, not a checkpoint directory; npbert will not replace it: move it")
    if resume:
        check_resumable(path, state, kind)
    elif saved_run(state) and not overwrite:
        raise NpbertError(f"output directory {path} already exists; pass --resume to continue that run "
                          "or --overwrite to start again there")


def check_resumable(path, state: Empty | Run, kind: str) -> None:
    """--resume continues a run of this command that saved a checkpoint, nothing else."""
    if isinstance(state, Empty):
        raise NpbertError(f"nothing to resume: {path} holds no npbert run")
    if state.kind not in (None, kind):
        raise NpbertError(f"{path} is a run of `npbert {state.kind}`, not of `npbert {kind}`: continue it with "
                          f"`npbert {state.kind} --out {path} --resume`")
    if not state.saved:
        raise NpbertError(f"nothing to resume: the run in {path} stopped before it saved a checkpoint; "
                          "run the same command again without --resume to start it over")


@contextlib.contextmanager
def open_run(path, state: Empty | Run, kind: str, resume: bool, overwrite: bool, log):
    """Make `path`, which holds `state` (settle's), ready for a run; yields a RunDir whose
    saved() must be called after each checkpoint save. With --overwrite the old run is moved
    aside, and put back if the block fails before the first save."""
    aside = None
    if not resume and overwrite and saved_run(state):
        aside = sibling(path, REPLACED)
        os.rename(path, aside)
        log(f"--overwrite: moved the earlier run in {path} aside; it is deleted at this run's first save")
    made = not os.path.isdir(path)
    os.makedirs(path, exist_ok=True)
    run = RunDir(path, aside)
    if not resume:                                      # a resumed run is a Run: its marker is there
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
        self.last_saved = None                          # the step of this invocation's last save

    def file(self, name) -> str:
        return os.path.join(self.path, name)

    def write_marker(self, kind: str) -> None:
        with open(self.file(MARKER), "w", encoding="utf-8") as f:
            json.dump(dict(kind=kind, created=time.strftime("%Y-%m-%dT%H:%M:%S%z")), f)
            f.write("\n")

    def saved(self, step=None) -> None:
        """A checkpoint of this run (of `step`) is on disk: the run it replaced can go."""
        self.last_saved = step
        if self.aside is not None:
            shutil.rmtree(self.aside)
            self.aside = None

