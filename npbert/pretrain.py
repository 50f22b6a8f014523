"""Pretraining: masked LM + next-sentence prediction on prepared instances.

    for step in range(steps):
        batch = next batch of the epoch's permutation          (resumable: epoch, index)
        loss, cache = pretraining_forward(params, batch, dropout rng)
        grads = pretraining_backward(cache); clip to global norm 1
        AdamW step at the warmup + linear-decay learning rate

with a progress line, held-out evaluation, a JSON-lines metrics log, and atomic
checkpoints that resume bit-exactly (same data order, RNG, optimizer state).
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

import numpy as np

from npbert.checkpoint import VOCAB_FILE, load_pretrained
from npbert.config import BertConfig
from npbert.errors import CheckpointError, DataError, NpbertError
from npbert.model import init_params, pretraining_backward, pretraining_forward
from npbert.optim import AdamW, clip_by_global_norm, linear_warmup_decay
from npbert.task_models import pretraining_config
from npbert.tokenization import BertTokenizer, load_vocab
from npbert.train import (MetricsLog, Position, StopOnInterrupt, Throughput, TrainingCheckpoint, check_finite, say,
                          format_eta, load_training_checkpoint, prepare_output_dir, save_training_checkpoint)

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
    do_lower_case: bool | None = None  # for a corpus: None lower-cases (with --model: the checkpoint's casing)
    preset: str = "tiny"
    model: str | None = None          # a checkpoint to pretrain further: its architecture and weights (instead of
                                      # preset), a new optimizer and schedule; for a corpus, its vocab.txt and casing
    model_overrides: dict | None = None  # BertConfig fields to change from the preset (e.g. a smaller test model)
    steps: int = 1200                 # the defaults finish in about 2.5 minutes on 2 cores (tiny, builtin)
    batch_size: int = 32
    learning_rate: float = 3e-3
    warmup_steps: int | None = None   # default: 10% of steps
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


def optimizer_kwargs(opts: PretrainOptions) -> dict:
    return dict(weight_decay=opts.weight_decay)


def pretrain(opts: PretrainOptions, resume=False, overwrite=False, log=say) -> dict:
    """Run (or resume) pretraining; returns the final held-out metrics and where the model is."""
    prepare_output_dir(opts.out, resume, overwrite)
    ckpt_dir = os.path.join(opts.out, CHECKPOINT_DIR)
    if resume:
        if not os.path.isdir(ckpt_dir):
            raise NpbertError(f"nothing to resume: {ckpt_dir} does not exist")
        saved = load_training_checkpoint(ckpt_dir, {})
        stop_after = opts.stop_after
        opts = PretrainOptions(**{**saved.options, "stop_after": stop_after})
        saved.optimizer.weight_decay = opts.weight_decay
        log(f"resuming {opts.out} at step {saved.position.step} of {opts.steps}")
    elif opts.model is not None:
        loaded = load_pretrained(opts.model, strict=False)
        opts = checkpoint_options(opts, loaded)
    train_data, heldout_data = load_data(opts, log)
    if resume:
        config, params, optimizer, position, rng = (saved.config, saved.params, saved.optimizer,
                                                    saved.position, saved.rng)
    else:
        if opts.model is not None:
            config, params = start_from_checkpoint(opts, loaded, train_data, log)
        else:
            config = BertConfig.from_preset(opts.preset, **{
                "vocab_size": train_data.vocab_size, **dropout_options(opts), **(opts.model_overrides or {})})
            params = init_params(config, np.random.default_rng(opts.seed), np.float32)
        optimizer = AdamW(params, **optimizer_kwargs(opts))
        position, rng = Position(), np.random.default_rng([opts.seed, 1])   # rng: dropout only
    check_data_fits(config, train_data, ckpt_dir if resume else opts.model or f"the {opts.preset} preset")
    options = dataclasses.asdict(opts)
    options.pop("stop_after")
    metrics = MetricsLog(os.path.join(opts.out, METRICS_FILE), truncate_after_step=position.step if resume else None)
    warmup = opts.warmup_steps if opts.warmup_steps is not None else opts.steps // 10
    baseline = most_frequent_token_accuracy(train_data, heldout_data)
    log(f"pretraining {opts.model or opts.preset} ({config.num_hidden_layers} layers, hidden {config.hidden_size}, vocab "
        f"{config.vocab_size}) on {len(train_data):,} instances, {opts.steps} steps of {opts.batch_size}, "
        f"peak lr {opts.learning_rate:g}, warmup {warmup}")

    # saved with the data's casing (its tokenizer_config.json), so that the checkpoint tokenizes as the data was
    tokenizer = BertTokenizer(train_data.vocab_file, do_lower_case=train_data.do_lower_case)

    def save():
        save_training_checkpoint(ckpt_dir, TrainingCheckpoint(config, params, optimizer, position, rng, options),
                                 tokenizer)

    window = RunningMetrics()
    speed = Throughput()
    with StopOnInterrupt() as stop:
        while position.step < opts.steps:
            batches = train_data.batches(opts.batch_size, opts.seed, position.epoch, position.batch)
            for batch in batches:
                lr = linear_warmup_decay(position.step, opts.learning_rate, warmup, opts.steps)
                out, cache = pretraining_forward(params, config, **batch, rng=rng)
                check_finite(out["loss"], position.step + 1)
                grads = pretraining_backward(cache)
                grad_norm = clip_by_global_norm(grads, opts.max_grad_norm)
                optimizer.step(params, grads, lr)
                position.step += 1
                position.batch += 1
                window.add(out)
                speed.add(int(batch["attention_mask"].sum()))
                if position.step % opts.log_every == 0 or position.step == opts.steps:
                    tokens_per_s, eta = speed.report(opts.steps - position.step)
                    m = window.pop()
                    log(f"step {position.step:>5}/{opts.steps} | loss {m['loss']:.3f} | mlm acc {m['mlm_acc']:.3f} "
                        f"| nsp acc {m['nsp_acc']:.3f} | lr {lr:.2e} | {tokens_per_s:,.0f} tok/s | "
                        f"ETA {format_eta(eta)}")
                    metrics.write(kind="train", step=position.step, lr=lr, grad_norm=grad_norm,
                                  tokens_per_s=tokens_per_s, **m)
                if position.step % opts.eval_every == 0 or position.step == opts.steps:
                    t_eval = time.perf_counter()
                    e = evaluate(params, config, heldout_data, opts.batch_size, opts.eval_batches)
                    log(f"  held-out: mlm acc {e['mlm_acc']:.3f} (baseline {baseline:.3f}) | nsp acc "
                        f"{e['nsp_acc']:.3f} | mlm loss {e['mlm_loss']:.3f} | nsp loss {e['nsp_loss']:.3f}")
                    metrics.write(kind="eval", step=position.step, **e)
                    speed.exclude(time.perf_counter() - t_eval)   # tok/s counts training only
                done = position.step >= opts.steps
                stopping = stop.requested or (opts.stop_after is not None and position.step >= opts.stop_after)
                if position.step % opts.save_every == 0 or done or stopping:
                    save()
                if stopping and not done:
                    log(f"stopped at step {position.step}; saved {ckpt_dir}; continue with "
                        f"`npbert pretrain --out {opts.out} --resume`")
                    return dict(stopped=True, step=position.step, checkpoint=ckpt_dir)
                if done:
                    break
            else:
                position.epoch, position.batch = position.epoch + 1, 0
    final = evaluate(params, config, heldout_data, opts.batch_size, max_batches=None)
    log(f"held-out MLM accuracy {final['mlm_acc']:.3f}  (most-frequent-token baseline {baseline:.3f}, "
        f"{final['mlm_acc'] / max(baseline, 1e-9):.1f}x)")
    log(f"held-out NSP accuracy {final['nsp_acc']:.3f}  (chance 0.500)")
    log(f"model saved to {ckpt_dir}  (try: npbert fill-mask {ckpt_dir} \"... [MASK] ...\")")
    return dict(final, baseline_mlm_acc=baseline, step=position.step, checkpoint=ckpt_dir, stopped=False)


def dropout_options(opts: PretrainOptions) -> dict:
    return dict(hidden_dropout_prob=opts.hidden_dropout_prob, attention_probs_dropout_prob=opts.attention_probs_dropout_prob)


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


def load_data(opts: PretrainOptions, log):
    """The prepared training and held-out splits: opts.data, or opts.corpus prepared into out/data."""
    from npbert.data.pretraining_data import PretrainingData
    directory = opts.data
    if directory is None:
        from npbert.data.prepare import PrepareOptions, prepare
        directory = os.path.join(opts.out, DATA_DIR)
        t0 = time.perf_counter()
        kwargs = dict(corpus=opts.corpus, out=directory, vocab=opts.vocab, vocab_size=opts.vocab_size,
                      max_seq_length=opts.max_seq_length, seed=opts.seed, max_documents=opts.max_documents)
        for name in ("dupe_factor", "do_lower_case"):             # None: prepare's default
            if getattr(opts, name) is not None:
                kwargs[name] = getattr(opts, name)
        prepare(PrepareOptions(**kwargs), log=lambda *a, **k: None)
        log(f"prepared {opts.corpus} into {directory} in {time.perf_counter() - t0:.1f} s")
    return PretrainingData(directory, "train"), PretrainingData(directory, HELDOUT_SPLIT)


class RunningMetrics:
    """Averages of loss and accuracies over the steps since the last pop()."""

    def __init__(self):
        self.sums, self.n = {}, 0

    def add(self, out):
        for k, v in step_metrics(out).items():
            self.sums[k] = self.sums.get(k, 0.0) + v
        self.n += 1

    def pop(self):
        m = {k: v / max(self.n, 1) for k, v in self.sums.items()}
        self.sums, self.n = {}, 0
        return m


def step_metrics(out) -> dict:
    mlm_hits, mlm_n = accuracy_counts(out["mlm_logits"], out["mlm_labels"])
    nsp_hits, nsp_n = accuracy_counts(out["nsp_logits"], out["nsp_labels"])
    return dict(loss=float(out["loss"]), mlm_loss=float(out["mlm_loss"]), nsp_loss=float(out["nsp_loss"]),
                mlm_acc=mlm_hits / max(mlm_n, 1), nsp_acc=nsp_hits / max(nsp_n, 1))


def accuracy_counts(logits, labels, ignore_index=-100):
    counted = labels != ignore_index
    return int((logits.argmax(axis=-1)[counted] == labels[counted]).sum()), int(counted.sum())


def evaluate(params, config, data, batch_size, max_batches=None) -> dict:
    """Held-out MLM and NSP loss and accuracy, without dropout, over a fixed order of batches."""
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
    return dict(mlm_loss=totals["mlm_loss"] / max(totals["mlm_n"], 1),
                nsp_loss=totals["nsp_loss"] / max(totals["nsp_n"], 1),
                mlm_acc=totals["mlm_hits"] / max(totals["mlm_n"], 1),
                nsp_acc=totals["nsp_hits"] / max(totals["nsp_n"], 1))


def masked_labels(data) -> np.ndarray:
    a = data.arrays
    predicted = np.arange(a["masked_lm_ids"].shape[1])[None, :] < a["num_masked"][:, None]  # (n, P)
    return a["masked_lm_ids"][predicted]                                                    # (N,)


def most_frequent_token_accuracy(train_data, heldout_data) -> float:
    """Chance baseline for MLM: always predict the token masked most often in training."""
    mode = np.bincount(masked_labels(train_data)).argmax()
    return float((masked_labels(heldout_data) == mode).mean())
