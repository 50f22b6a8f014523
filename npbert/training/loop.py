"""The training loop that pretraining and fine-tuning share: one step is

    loss, cache = forward(params, batch, dropout)           stop if the loss is not finite
    grads = backward(cache)
    norm = clip_by_global_norm(grads, max_grad_norm)        stop if the norm is not finite
    AdamW step at the warmup + linear-decay learning rate     (frozen parameters, not in the optimizer, left as they are)

then the progress line and metrics record every `log_every` steps, the job's evaluation when
it is due, and a checkpoint every `save_every` steps, at the end, at each epoch end if the job
wants one, and on a stop (Ctrl-C or stop_after). A checkpoint holds everything the next step
depends on, so a resumed run repeats an uninterrupted one to the bit (same backend, dtype and
threads: docs/determinism.md).

A job whose data change part-way (pretraining's short sequences, then long) says so
(use_data_of, data_changes_after): the next phase reads its data from its first epoch.

What is a job's own (its data, model, metrics, evaluation) comes in as a Job; see
npbert/pretraining/recipe.py and npbert/finetuning/recipe.py.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from npbert.errors import NpbertError
from npbert.optim import clip_by_global_norm, linear_warmup_decay
from npbert.training.interrupt import StopOnInterrupt
from npbert.training.progress import RunningMeans, Throughput, format_eta
from npbert.training.state import TrainingCheckpoint


class TrainingDiverged(NpbertError):
    """The loss, the gradient norm or the updated parameters became NaN or infinite; nothing of
    that step is saved (npbert/training/run.py says which checkpoint is kept)."""


@dataclass
class Schedule:
    total_steps: int
    warmup_steps: int
    peak_lr: float
    max_grad_norm: float

    def lr(self, step: int) -> float:
        """The learning rate of 0-based update `step`."""
        return linear_warmup_decay(step, self.peak_lr, self.warmup_steps, self.total_steps)


class Job:
    """What a kind of training brings to the loop. Subclasses set these and override the methods."""
    batches_per_epoch = 0
    save_at_epoch_end = False

    def use_data_of(self, step: int) -> None:
        """Train on the data of the phase `step` belongs to (batches_per_epoch and batches() then
        read it): pretraining's short sequences first, then long ones."""

    def data_changes_after(self, step: int) -> bool:
        """Whether the next step reads other data (its first epoch, from batch 0)."""
        return False

    def batches(self, epoch: int, start: int):
        """The batches of an epoch from index `start` on (a function of epoch and index only)."""
        raise NotImplementedError

    def forward(self, params, batch, rng):             # -> (out with out["loss"], cache)
        raise NotImplementedError

    def backward(self, cache) -> dict:
        raise NotImplementedError

    def step_metrics(self, out, batch) -> dict:
        """Floats to average over the steps of a progress line (a "loss" at least)."""
        raise NotImplementedError

    def describe(self, means: dict, epoch: int) -> str:
        """The middle of a progress line, e.g. "loss 1.234 | mlm acc 0.321"."""
        raise NotImplementedError

    def record(self, epoch: int) -> dict:
        """Fields a "train" metrics record carries besides step, lr, grad_norm, speed and the means."""
        return {}

    def after_step(self, position, epoch_ended: bool, done: bool) -> None:
        """Evaluate (and log) if it is due after this step (position: where training is now)."""


def train(job: Job, ckpt: TrainingCheckpoint, schedule: Schedule, save, metrics, log, log_every: int,
          save_every: int, stop_after: int | None = None):
    """Run ckpt on until schedule.total_steps; returns False when it got there, else (after
    saving) the number of the signal that stopped it (Ctrl-C, SIGTERM), or True at stop_after.
    save(ckpt) writes a checkpoint; metrics is the run's MetricsLog."""
    position, total = ckpt.position, schedule.total_steps
    means = RunningMeans.from_json(ckpt.extra.pop("means", None))
    speed = Throughput()

    def checkpoint():
        ckpt.extra["means"] = means.to_json()          # steps not yet in a progress line
        t0 = time.perf_counter()
        save(ckpt)
        speed.exclude(time.perf_counter() - t0)

    with StopOnInterrupt() as stop:
        while position.step < total:
            job.use_data_of(position.step)
            if position.batch >= job.batches_per_epoch:    # saved at an epoch's end by an older npbert
                position.epoch, position.batch = position.epoch + 1, 0
            stepped = False
            for batch in job.batches(position.epoch, position.batch):
                stepped = True
                out, lr, grad_norm = update(job, ckpt, schedule, batch)
                epoch = position.epoch                 # the epoch this step belongs to
                position.step, position.batch = position.step + 1, position.batch + 1
                epoch_ended = position.batch == job.batches_per_epoch
                if epoch_ended:
                    position.epoch, position.batch = position.epoch + 1, 0
                data_changes = job.data_changes_after(position.step)
                if data_changes:                       # the next phase reads its data from the start
                    position.epoch, position.batch = 0, 0
                done = position.step >= total
                means.add(job.step_metrics(out, batch))
                speed.add(int(batch["attention_mask"].sum()))
                if position.step % log_every == 0 or done:
                    tokens_per_s, eta = speed.report(total - position.step)
                    m = means.pop()
                    log(f"step {position.step:>5}/{total} | {job.describe(m, epoch)} | lr {lr:.2e} | "
                        f"{tokens_per_s:,.0f} tok/s | ETA {format_eta(eta)}")
                    metrics.write(kind="train", step=position.step, **job.record(epoch), lr=lr,
                                  grad_norm=grad_norm, tokens_per_s=tokens_per_s, **m)
                t0 = time.perf_counter()
                job.after_step(position, epoch_ended, done)
                speed.exclude(time.perf_counter() - t0)   # tok/s counts training only
                stopping = stop.requested or (stop_after is not None and position.step >= stop_after)
                if (save_every and position.step % save_every == 0) or done or stopping or \
                        (epoch_ended and job.save_at_epoch_end):
                    checkpoint()
                if stopping and (not done or stop.requested):   # a Ctrl-C in the last step (say while the
                    return stop.requested or True              # evaluation's kernels load) is not swallowed
                if done or epoch_ended or data_changes:
                    break
            if not stepped:
                raise NpbertError(f"epoch {position.epoch} of the training data has no batch {position.batch}")
    return False


def update(job: Job, ckpt: TrainingCheckpoint, schedule: Schedule, batch):
    """One training step on batch -> (outputs, learning rate, gradient norm before clipping)."""
    step = ckpt.position.step                          # updates done before this one
    lr = schedule.lr(step)
    out, cache = job.forward(ckpt.params, batch, ckpt.dropout())   # a function of the seed and step only
    check_finite("loss", out["loss"], step + 1)
    grads = job.backward(cache)
    grad_norm = clip_by_global_norm(grads, schedule.max_grad_norm)
    check_finite("gradient norm", grad_norm, step + 1)
    ckpt.optimizer.step(ckpt.params, grads, lr)
    return out, lr, grad_norm


def check_finite(what: str, value, step: int) -> None:
    if not math.isfinite(float(value)):
        raise TrainingDiverged(f"the {what} is {float(value)} at step {step}; stopped without saving it "
                               "(try a lower --learning-rate)")
