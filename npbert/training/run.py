"""One run's lifecycle, written once for pretraining and fine-tuning:

    check the flags and every option                     nothing read or written yet
    take the run directory's lock                        one writer per run (npbert/lock.py)
    settle --out (finish an --overwrite a kill cut short), read what it holds once, refuse on that
    the inputs' paths made absolute; on --resume load the checkpoint (a save cut short put back), its options
    recipe.prepare: read and check every input           still nothing written; returns what it read
    open the run (--overwrite moves the old one aside)   run_dir.py
        recipe.start: the data, model, job, schedule     on what prepare read; inputs pinned (SHA-256)
        train, saving only finite models                 loop.py
    say how it ended: finished (recipe.finish), stopped (--stop-after), interrupted (Ctrl-C)

What a kind of training brings is a Recipe (npbert/pretraining/recipe.py, npbert/finetuning/recipe.py): its
options, inputs, model, job and final report. A write that fails (a full or read-only disk), a
diverged step or a non-finite model ends the run with one line saying which checkpoint is kept.
"""
from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass

import numpy as np

from npbert.backend import get_backend
from npbert.errors import NpbertError
from npbert.lock import run_lock
from npbert.training.inputs import INPUTS, absolute_paths, check_pinnable, check_same_inputs, fingerprint
from npbert.training.loop import Schedule, TrainingDiverged, train
from npbert.training.metrics_log import FINAL_KINDS, MetricsLog
from npbert.training.run_dir import CHECKPOINT_DIR, METRICS_FILE, check_out, check_out_flags, open_run, settle
from npbert.training.state import (check_dropout_resumable, load_training_checkpoint, note_backend_change,
                                   recover_checkpoint, save_training_checkpoint)
from npbert.training.training_options import given_options, resumed_options


@dataclass
class Started:
    """What recipe.start hands the loop."""
    ckpt: object                                        # TrainingCheckpoint
    job: object                                         # a loop.Job
    schedule: Schedule
    tokenizer: object                                   # saved with every checkpoint


class Recipe:
    """What a kind of training brings to the lifecycle. It keeps no state of a run: what prepare()
    reads it returns, and the lifecycle hands that to start()."""
    kind = "train"                                     # the command, and the run marker's kind
    changeable = ()                                    # options a --resume may change

    def check(self, opts) -> None:
        """Every option's range and choices (npbert/option_declaration.py's check_ranges), and what
        else they must satisfy."""

    def paths(self, opts) -> tuple:
        """The options naming files or directories: made absolute before anything else."""
        return ()

    def prepare(self, opts, saved, log) -> tuple:
        """Read and check every input (nothing written) -> (opts as the run will use them, what
        was read: start() receives it)."""
        return opts, None

    def inputs(self, opts) -> list:
        """The files and directories whose contents the run trains on (pinned by SHA-256)."""
        return []

    def start(self, opts, saved, prepared, metrics, log) -> Started:
        """The job on what prepare() read, and the checkpoint it trains (saved, or a new one)."""
        raise NotImplementedError

    def before_save(self, ckpt, job) -> None:
        """Put the job's running state into ckpt.extra."""

    def finish(self, opts, started, metrics, log) -> dict:
        raise NotImplementedError


def run_training(recipe: Recipe, opts, resume=False, overwrite=False, log=print, given=None) -> dict:
    """Run (or resume) one training run of `recipe` in opts.out. given: the options the user set
    (the CLI's typed flags); default, those that differ from the options' defaults."""
    check_out_flags(opts.out, resume, overwrite)
    recipe.check(opts)                                 # every option's range first (option_declaration.py)
    with run_lock(opts.out) as lock:
        state = settle(opts.out)                       # what OUT holds, read once: what follows decides on it
        check_out(opts.out, state, resume, overwrite, recipe.kind)
        opts = absolute_paths(opts, recipe.paths(opts))   # OUT settled; the inputs from here on
        saved = None
        if resume:
            saved = resumed_checkpoint(opts.out, log)
            opts = resumed_options(opts, saved.options, given_options(opts) if given is None else given,
                                   recipe.changeable, opts.out)
            recipe.check(opts)
        check_pinnable(recipe.inputs(opts))
        opts, prepared = recipe.prepare(opts, saved, log)
        if resume:
            check_same_inputs(saved.extra.get(INPUTS), recipe.inputs(opts), opts.out)
        return run_in_directory(recipe, opts, prepared, saved, state, overwrite, log, lock)


def resumed_checkpoint(out, log):
    ckpt_dir = os.path.join(out, CHECKPOINT_DIR)
    recover_checkpoint(ckpt_dir, log)
    saved = load_training_checkpoint(ckpt_dir)
    check_dropout_resumable(saved, out)
    log(f"resuming {out} at step {saved.position.step}")
    return saved


def run_in_directory(recipe, opts, prepared, saved, state, overwrite, log, lock) -> dict:
    resume = saved is not None
    with open_run(opts.out, state, recipe.kind, resume, overwrite, log) as run, failures_said(run, saved, opts.out):
        lock.hold_directory()                          # the directory made (or made anew by --overwrite) now
        if resume:
            note_backend_change(saved.backend, log)
        metrics = MetricsLog(os.path.join(opts.out, METRICS_FILE),
                             keep_until_step=saved.position.step if resume else None, drop_kinds=FINAL_KINDS)
        started = recipe.start(opts, saved, prepared, metrics, log)
        ckpt = started.ckpt
        ckpt.backend = get_backend()
        if not resume:
            ckpt.extra[INPUTS] = fingerprint(recipe.inputs(opts))

        def save(ckpt):
            check_finite_model(ckpt)
            recipe.before_save(ckpt, started.job)
            save_training_checkpoint(run.file(CHECKPOINT_DIR), ckpt, started.tokenizer)
            run.saved(ckpt.position.step)

        stopped = train(started.job, ckpt, started.schedule, save, metrics, log, opts.log_every, opts.save_every,
                        opts.stop_after)
        if not stopped:
            return recipe.finish(opts, started, metrics, log)
    step, ckpt_dir = ckpt.position.step, run.file(CHECKPOINT_DIR)
    signum = stopped if stopped is not True else None
    how = (f"stopped at step {step} (--stop-after {opts.stop_after})" if signum is None
           else f"npbert {recipe.kind}: {'terminated (SIGTERM)' if signum == signal.SIGTERM else 'interrupted'} at "
                f"step {step}")
    log(f"{how}; saved {ckpt_dir}; continue with `npbert {recipe.kind} --out {opts.out} --resume`")
    return dict(stopped=True, step=step, checkpoint=ckpt_dir, **({"signal": int(signum)} if signum else {}))


def check_finite_model(ckpt) -> None:
    """Never save a non-finite model: an update can overflow the weights even when the loss
    and the gradient norm it came from were finite (a huge learning rate)."""
    for name, p in ckpt.params.items():
        if not np.isfinite(p).all():
            raise TrainingDiverged(f"after step {ckpt.position.step} the parameter {name} is not finite "
                                   "(try a lower --learning-rate); this model is not saved")


@contextlib.contextmanager
def failures_said(run, saved, out):
    """A run that ends on a diverged step or a failed write ends with one line that says which
    checkpoint is kept (a write error's traceback would not)."""
    try:
        yield
    except TrainingDiverged as e:
        raise TrainingDiverged(f"{e}; {kept(run, saved, out)}") from None
    except OSError as e:
        where = e.filename or out
        raise NpbertError(f"{where}: {e.strerror or e}; {kept(run, saved, out)}") from None


def kept(run, saved, out) -> str:
    step = run.last_saved if run.last_saved is not None else saved.position.step if saved else None
    if step is not None:
        return f"the last good checkpoint, step {step} in {run.file(CHECKPOINT_DIR)}, is kept"
    if run.aside is not None:
        return f"this run saved nothing, and the earlier run in {out} is put back as it was"
    return "no checkpoint of this run had been saved yet"
