"""Training machinery shared by pretraining and fine-tuning: the training checkpoint (model +
optimizer + RNG + data position, saved atomically as one directory), the progress line, the
metrics log, and a Ctrl-C that stops after the current step instead of in the middle of it.

A training checkpoint is a Hugging Face model directory (config.json, vocab.txt,
model.safetensors) with two more files beside the weights:

    training_state.npz    the AdamW moments m/<param name>, v/<param name>
    training_state.json   step, data position, the dropout Generator's state, options, metrics

Both are written in the same atomic directory swap as the weights, so they always agree.
"""
from __future__ import annotations

import io
import json
import math
import os
import signal
import time
from dataclasses import dataclass, field

import numpy as np

from npbert.checkpoint import load_pretrained, save_pretrained
from npbert.errors import CheckpointError, NpbertError
from npbert.optim import AdamW

STATE_ARRAYS, STATE_JSON = "training_state.npz", "training_state.json"


def say(message: str) -> None:
    """Print a progress line now, even when stdout is a file or a pipe (which Python buffers)."""
    print(message, flush=True)


class TrainingDiverged(NpbertError):
    """The loss became NaN or infinite; the last good checkpoint is kept."""


@dataclass
class Position:
    """Where training is: updates done, and the next batch to read (epoch, index in epoch)."""
    step: int = 0
    epoch: int = 0
    batch: int = 0


@dataclass
class TrainingCheckpoint:
    config: object
    params: dict
    optimizer: AdamW
    position: Position
    rng: np.random.Generator
    options: dict
    extra: dict = field(default_factory=dict)       # free-form: metrics so far, elapsed time, ...


def save_training_checkpoint(directory, ckpt: TrainingCheckpoint, vocab) -> None:
    state = dict(position=vars(ckpt.position), optimizer_t=ckpt.optimizer.t,
                 rng_state=ckpt.rng.bit_generator.state, options=ckpt.options, extra=ckpt.extra)
    buf = io.BytesIO()
    np.savez(buf, **ckpt.optimizer.state_arrays())
    save_pretrained(directory, ckpt.config, ckpt.params, vocab,
                    extra_files={STATE_ARRAYS: buf.getvalue(), STATE_JSON: json.dumps(state, indent=1) + "\n"})


def load_training_checkpoint(directory, optimizer_kwargs) -> TrainingCheckpoint:
    """Everything needed to continue exactly where the run stopped."""
    for name in (STATE_ARRAYS, STATE_JSON):
        if not os.path.exists(os.path.join(directory, name)):
            raise CheckpointError(f"{directory} has no {name}: it is a model, not a resumable training checkpoint")
    loaded = load_pretrained(directory, strict=False)      # fine-tuning heads are extra tensors
    try:
        with open(os.path.join(directory, STATE_JSON), encoding="utf-8") as f:
            state = json.load(f)
        with np.load(os.path.join(directory, STATE_ARRAYS)) as z:
            moments = {k: z[k] for k in z.files}
        rng = np.random.default_rng()
        rng.bit_generator.state = state["rng_state"]
        position = Position(**state["position"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CheckpointError(f"{directory}: the training state is corrupt ({e})") from None
    optimizer = AdamW(loaded.params, **optimizer_kwargs)
    optimizer.load_state_arrays(moments, state["optimizer_t"])
    return TrainingCheckpoint(loaded.config, loaded.params, optimizer, position, rng, state["options"],
                              state.get("extra", {}))


def check_finite(loss, step) -> None:
    if not math.isfinite(float(loss)):
        raise TrainingDiverged(f"the loss is {float(loss)} at step {step}; stopped without saving it, "
                               "the last good checkpoint is kept (try a lower --learning-rate)")


def prepare_output_dir(out_dir, resume: bool, overwrite: bool) -> None:
    """Refuse to clobber a previous run unless asked to resume it or to overwrite it."""
    if resume:
        return
    if os.path.exists(out_dir) and os.listdir(out_dir):
        if not overwrite:
            raise NpbertError(f"output directory {out_dir} already exists; pass --resume to continue that run "
                              "or --overwrite to start again there")
        import shutil
        shutil.rmtree(out_dir)
    os.makedirs(out_dir, exist_ok=True)


class MetricsLog:
    """One JSON object per line, appended: easy to plot (pandas.read_json(path, lines=True))."""

    def __init__(self, path, truncate_after_step=None):
        self.path = path
        if truncate_after_step is not None and os.path.exists(path):
            # on resume, drop records written after the checkpoint so the log reads as one run
            with open(path, encoding="utf-8") as f:
                keep = [line for line in f if json.loads(line).get("step", 0) <= truncate_after_step]
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(keep)

    def write(self, **record) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


class StopOnInterrupt:
    """Inside `with StopOnInterrupt() as stop:` the first Ctrl-C sets stop.requested (the loop
    saves and exits after the current step); a second Ctrl-C interrupts at once."""

    def __init__(self):
        self.requested = False

    def __enter__(self):
        self._previous = signal.getsignal(signal.SIGINT)

        def handler(signum, frame):
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True
            print("\ninterrupt: finishing this step, then saving a resumable checkpoint (Ctrl-C again to abort)",
                  flush=True)
        try:
            signal.signal(signal.SIGINT, handler)
        except ValueError:                  # not the main thread: leave Ctrl-C as it is
            self._previous = None
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False


class Throughput:
    """Tokens per second and ETA over the steps since the last report."""

    def __init__(self):
        self.t0, self.tokens, self.steps = time.perf_counter(), 0, 0

    def add(self, tokens: int) -> None:
        self.tokens += tokens
        self.steps += 1

    def exclude(self, seconds: float) -> None:
        """Leave out time spent on something else (an evaluation) from the current window."""
        self.t0 += seconds

    def report(self, steps_left: int):
        dt = max(time.perf_counter() - self.t0, 1e-9)
        tokens_per_s, eta = self.tokens / dt, steps_left * dt / max(self.steps, 1)
        self.t0, self.tokens, self.steps = time.perf_counter(), 0, 0
        return tokens_per_s, eta


def format_eta(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"
