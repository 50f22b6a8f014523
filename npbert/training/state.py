"""The training checkpoint: everything needed to continue a run exactly where it stopped.

It is a Hugging Face model directory (config.json, vocab.txt, model.safetensors) with two more
files beside the weights:

    training_state.npz    the AdamW moments m/<param name>, v/<param name>
    training_state.json   step, data position, the dropout seed, options, backend, the parameters
                          the optimizer leaves alone (frozen), and the loop's running state
                          (metrics window, best dev score, ...)

Both are written in the same atomic directory swap as the weights, so they always agree; a
save killed half-way is undone by recover_checkpoint (npbert/atomic.py's recover_dir).
"""
from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
from dataclasses import dataclass, field

import numpy as np

from npbert.atomic import recover_dir
from npbert.backend import get_backend
from npbert.checkpoint import load_pretrained, save_pretrained
from npbert.errors import JSON_ERRORS, CheckpointError
from npbert.ops.dropout import DropoutStream
from npbert.optim import AdamW

STATE_ARRAYS, STATE_JSON = "training_state.npz", "training_state.json"
DROPOUT = "splitmix64"       # the dropout generator's name in training_state.json (ops/dropout.py)


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
    dropout_seed: int                               # a step's dropout is DropoutStream(dropout_seed, step)
    options: dict                                   # the run's options, as it was started
    backend: str = ""                               # the hot-op backend it ran on ("" in older checkpoints)
    extra: dict = field(default_factory=dict)       # the loop's and the job's running state (JSON)
    frozen: tuple = ()                              # parameters saved with the model but never updated
    pcg64_dropout: bool = False                     # saved by an npbert whose dropout drew from NumPy's PCG64

    def dropout(self) -> DropoutStream:
        """The randomness of the next step: counter-based, a function of the seed and the step only."""
        return DropoutStream(self.dropout_seed, self.position.step)


def trained(params: dict, frozen) -> dict:
    """The parameters the optimizer updates: all but the frozen ones."""
    return {k: p for k, p in params.items() if k not in frozen}


def start_training(config, params, opts, frozen=()) -> TrainingCheckpoint:
    """Step 0 of a run: a fresh AdamW over the parameters not frozen, the data at its start, the
    dropout seed (the run's: the only randomness of a step), and the options the run is started
    with (less stop_after, which belongs to one invocation, not to the run)."""
    options = dataclasses.asdict(opts)
    options.pop("stop_after", None)
    frozen = tuple(frozen)
    return TrainingCheckpoint(config, params, AdamW(trained(params, frozen), weight_decay=opts.weight_decay),
                              Position(), opts.seed, options, frozen=frozen)


def save_training_checkpoint(directory, ckpt: TrainingCheckpoint, vocab) -> None:
    state = dict(position=vars(ckpt.position), optimizer_t=ckpt.optimizer.t, backend=ckpt.backend,
                 dropout=dict(generator=DROPOUT, seed=ckpt.dropout_seed), options=ckpt.options,
                 frozen=list(ckpt.frozen), extra=ckpt.extra)
    buf = io.BytesIO()
    np.savez(buf, **ckpt.optimizer.state_arrays())
    save_pretrained(directory, ckpt.config, ckpt.params, vocab,
                    extra_files={STATE_ARRAYS: buf.getvalue(), STATE_JSON: json.dumps(state, indent=1) + "\n"})


def recover_checkpoint(directory, log) -> None:
    """Put back the last complete checkpoint if a kill interrupted its replacement, and remove
    the half-written copies such kills leave."""
    restored = recover_dir(directory)
    if restored:
        log(f"the last save was interrupted: restored the checkpoint before it from {restored}")


def load_training_checkpoint(directory) -> TrainingCheckpoint:
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
        check_counts(state)
        check_extra(state.get("extra", {}))
        position = Position(**state["position"])
        options = dict(state["options"])
        pcg64 = "dropout" not in state                     # older npbert: PCG64's state, which this one no longer reads
        dropout_seed = int(options["seed"] if pcg64 else state["dropout"]["seed"])
        frozen = tuple(state.get("frozen", ()))             # older checkpoints: nothing frozen
        unknown = [name for name in frozen if name not in loaded.params]
        if unknown:
            raise CheckpointError(f"{directory}: the training state freezes {unknown[0]}, which the model lacks")
        optimizer = AdamW(trained(loaded.params, frozen), weight_decay=options.get("weight_decay", 0.01))
        optimizer.load_state_arrays(moments, state["optimizer_t"])
    except (OSError, EOFError, KeyError, TypeError, ValueError, AttributeError, zipfile.BadZipFile,
            *JSON_ERRORS) as e:
        raise CheckpointError(f"{directory}: the training state is corrupt ({str(e)[:200]})") from None
    return TrainingCheckpoint(loaded.config, loaded.params, optimizer, position, dropout_seed, options,
                              state.get("backend", ""), state.get("extra", {}), frozen, pcg64)


def check_counts(state) -> None:
    """KeyError/TypeError (reported as a corrupt state) unless the position and the optimizer's
    update count are integers >= 0: a tampered `"step": null` or a negative count would fail
    later, inside the first step, as a ZeroDivisionError."""
    counts = dict(state["position"], optimizer_t=state["optimizer_t"])
    for name, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise TypeError(f"{name} is {value!r}, not an integer >= 0")


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _numbers(d) -> bool:
    return isinstance(d, dict) and all(isinstance(k, str) and _number(v) for k, v in d.items())


# What the loop and the jobs keep in the state's "extra", each with what it must be: read on
# --resume, a tampered one would fail inside training (an AttributeError, a ValueError at the
# first evaluation) instead of as a corrupt state.
EXTRA_FIELDS = {
    "means": (lambda v: isinstance(v, dict) and set(v) <= {"sums", "n"} and _numbers(v.get("sums", {}))
              and _count(v.get("n", 0)), '{"sums": {name: number}, "n": count}'),            # training/loop.py
    "inputs": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in (*v, *v.values())),
               "{path: SHA-256}"),                                                          # training/inputs.py
    "heldout_losses": (lambda v: isinstance(v, list) and all(isinstance(h, list) and len(h) == 2 and _count(h[0])
                                                              and _number(h[1]) for h in v),
                       "[[step, loss], ...]"),                                               # pretraining/job.py
    "best": (lambda v: _numbers(v) and _count(v.get("epoch")) and _count(v.get("step")),
             '{metric: number, ..., "epoch": count, "step": count}'),                       # finetuning/recipe.py
}


def check_extra(extra) -> None:
    """TypeError (reported as a corrupt state) unless extra is an object whose known fields are
    what their readers read."""
    if not isinstance(extra, dict):
        raise TypeError(f"extra is {type(extra).__name__}, not an object")
    for key, (fits, want) in EXTRA_FIELDS.items():
        if key in extra and not fits(extra[key]):
            raise TypeError(f"extra.{key} must be {want}")


def check_dropout_resumable(ckpt: TrainingCheckpoint, where) -> None:
    """CheckpointError for a run started by an npbert whose dropout drew from NumPy's PCG64, when it
    drops anything: this npbert's masks are counter-based (ops/dropout.py), so it could not
    continue that run as it was. Without dropout a step has no randomness: it resumes as it was."""
    config = ckpt.config
    rates = [getattr(config, k, 0.0) or 0.0 for k in ("hidden_dropout_prob", "attention_probs_dropout_prob")]
    rates.append(float(getattr(config, "extra", {}).get("classifier_dropout") or 0.0))
    if ckpt.pcg64_dropout and any(rates):
        raise CheckpointError(f"{where} was started by an older npbert whose dropout masks came from NumPy's PCG64 "
                              "generator, and this npbert's are counter-based (docs/determinism.md): it cannot "
                              "continue that run as it was; finish it with the npbert that started it, or start "
                              "again with --overwrite")


def note_backend_change(saved_backend: str, log) -> None:
    """A resumed run on another backend continues correctly, but not to the bit."""
    if saved_backend and saved_backend != get_backend():
        log(f"note: this run ran on the {saved_backend} backend and resumes on {get_backend()}: it continues "
            "correctly, but not bit for bit as it would have (docs/determinism.md)")
