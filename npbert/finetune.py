"""Fine-tuning: a pretrained BERT + a task head, trained end to end on a labelled task (or, with
--features, the feature-based approach: the encoder frozen, only a head on its features trained).

    for epoch in range(epochs):
        for batch in the epoch's permutation of the training features   (resumable: epoch, index)
            loss, cache = <head>_forward(params, batch, dropout rng); grads = <head>_backward(cache)
            clip to global norm 1; AdamW step at the warmup + linear-decay learning rate
        evaluate on the dev set; keep the best model (out/best), save a resumable checkpoint

The paper's recipe is the default (batch 32, 3 epochs, 10% warmup, weight decay 0.01, clip 1.0)
except the learning rate: 1e-4 rather than the paper's {5e-5, 3e-5, 2e-5} for BERT-Base,
because the small models npbert trains fine-tune best with larger steps (Google's small BERTs
were tuned over {3e-4, 1e-4, 5e-5, 3e-5}; see docs/finetuning.md).
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

import numpy as np

from npbert.checkpoint import load_pretrained, save_pretrained
from npbert.config import BertConfig
from npbert.errors import CheckpointError, DataError, NpbertError
from npbert.model import init_params
from npbert.feature_based import CHOICES, FEATURES, FIELD, FINE_TUNE, features_named, frozen_names, with_features
from npbert.finetuned import (check_max_length, evaluate_checkpoint, evaluate_encoded, format_scores, label_names,
                              majority_baseline)
from npbert.heads.params import check_head, finetuned_config, init_head, label_names_of
from npbert.task_model import model_of
from npbert.tasks.encoding import make_batch, train_batches
from npbert.tasks.qa import QAOptions
from npbert.tasks.registry import get_task, read_examples
from npbert.tokenizer import BertTokenizer
from npbert.training.loop import Job, Schedule
from npbert.training.options import check_numbers
from npbert.training.progress import say
from npbert.training.run import Recipe, Started, run_training
from npbert.training.run_dir import CHECKPOINT_DIR
from npbert.training.state import start_training

BEST_DIR = "best"


@dataclass
class FinetuneOptions:
    task: str = "builtin-sentence"
    model: str | None = None             # a checkpoint directory (npbert or Hugging Face)
    from_scratch: str | None = None      # or a preset, randomly initialised (a baseline)
    vocab: str | None = None             # vocab.txt for --from-scratch (builtin tasks: the built-in one)
    train: str | None = None             # training file (generated tasks: a split name, default "train")
    dev: str | None = None               # dev file (generated tasks: default "dev")
    test: str | None = None              # scored once at the end with the best model, if given
    out: str = "runs/finetune"
    max_seq_length: int | None = None    # default: the task's (128; SQuAD 384; rt-polarity, built-in 64)
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 1e-4
    warmup_proportion: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    features: str = FINE_TUNE            # or a feature-based choice (npbert/feature_based.py): encoder frozen
    hidden_dropout_prob: float | None = None        # default: the checkpoint's (HF's and the presets':
    attention_probs_dropout_prob: float | None = None  # 0.1; npbert pretrain saves 0, see docs/finetuning.md)
    max_train_examples: int | None = None           # the first n examples only (quick runs)
    max_eval_examples: int | None = None
    eval_batch_size: int = 64
    doc_stride: int = QAOptions.doc_stride
    max_query_length: int = QAOptions.max_query_length
    n_best_size: int = QAOptions.n_best_size
    max_answer_length: int = QAOptions.max_answer_length
    seed: int = 0
    log_every: int = 20
    save_every: int = 200                # steps between resumable checkpoints (and at each epoch's end)
    stop_after: int | None = None        # stop (and save) once the run reaches this step, counted from its start

    def qa(self) -> QAOptions:
        return QAOptions(self.doc_stride, self.max_query_length, self.n_best_size, self.max_answer_length)


# Options a resumed run may change: what is logged and saved, when it stops, the evaluation
# batch size and the test file scored at the end; not what it trains (npbert/training/options.py).
CHANGEABLE_ON_RESUME = ("out", "log_every", "save_every", "stop_after", "eval_batch_size", "test")


def finetune(opts: FinetuneOptions, resume=False, overwrite=False, log=say, given=None) -> dict:
    """Run (or resume) fine-tuning; returns the best dev metrics and where the model is.
    given: the options the user set (the CLI's typed flags); default, those that differ from
    FinetuneOptions' defaults. The task files, the model and every option are checked before
    anything is written (npbert/training/run.py)."""
    return run_training(FinetuningRecipe(), opts, resume, overwrite, log, given)


class FinetuningRecipe(Recipe):
    """Fine-tuning in the shared lifecycle: prepare() reads the task's examples and the model and
    encodes them (nothing written), start() builds the job, finish() reports the best dev score
    and scores --test once."""
    kind, changeable = "finetune", CHANGEABLE_ON_RESUME

    def check(self, opts):
        check_options(opts)

    def paths(self, opts):
        return ("model", "vocab") if get_task(opts.task).generated else ("model", "vocab", "train", "dev", "test")

    def prepare(self, opts, saved, log):
        self.task = task = get_task(opts.task)
        self.max_len = opts.max_seq_length or task.max_seq_length
        self.train_examples = read_examples(task, opts.train or _default_split(task, "train"))[:opts.max_train_examples]
        self.dev_examples = read_examples(task, opts.dev or _default_split(task, "dev"))[:opts.max_eval_examples]
        for examples, split in ((self.train_examples, "training"), (self.dev_examples, "dev")):
            if not task.format.has_gold(examples):
                raise DataError(f"{examples[0]['where']}: task {task.name} needs labelled {split} examples")
        self.labels = labels = label_names(task, self.train_examples)
        if saved is not None:
            config, params, tokenizer = saved.config, saved.params, BertTokenizer.from_pretrained(
                os.path.join(opts.out, CHECKPOINT_DIR))
        else:
            config, params, tokenizer = start_model(opts, task, labels, log)
        self.config = finetuned_config(config, task.head, task.format.saved_names(labels), opts.features)
        self.params, self.tokenizer = params, tokenizer
        check_max_length(self.config, self.max_len)
        self.train_set = task.format.encode(self.train_examples, tokenizer, self.max_len, labels, opts.qa())
        self.dev_set = task.format.encode(self.dev_examples, tokenizer, self.max_len, labels, opts.qa())
        return opts

    def inputs(self, opts):
        return [] if get_task(opts.task).generated else [opts.train, opts.dev]

    def start(self, opts, saved, metrics, log):
        task, labels = self.task, self.labels
        ckpt = saved or start_training(self.config, self.params, opts, frozen_names(self.config, self.params))
        ckpt.config = self.config
        job = FinetuningJob(ckpt, task, self.tokenizer, self.train_set, self.dev_examples, self.dev_set, labels, opts,
                            os.path.join(opts.out, BEST_DIR), metrics, log)
        total = opts.epochs * job.batches_per_epoch
        schedule = Schedule(total, int(opts.warmup_proportion * total), opts.learning_rate, opts.max_grad_norm)
        log(f"fine-tuning for {task.name} ({describe_head(task, labels)}) on {len(self.train_examples):,} "
            f"examples ({count(sequences(task, self.train_set.features), 'sequence')}), dev "
            f"{len(self.dev_examples):,}: {count(opts.epochs, 'epoch')} of {count(job.batches_per_epoch, 'step')} "
            f"of {opts.batch_size}, peak lr {opts.learning_rate:g}, warmup {schedule.warmup_steps}")
        if opts.features != FINE_TUNE:
            log(f"feature-based ({opts.features}): the encoder is frozen; the head reads "
                f"{FEATURES[opts.features].about} and trains "
                f"{sum(p.size for p in ckpt.optimizer.m.values()):,} parameters")
        baseline = majority_baseline(task, self.train_examples, self.dev_examples, labels)
        log(f"dev baseline (always the most frequent training answer): {format_scores(baseline)}")
        if saved is None:
            metrics.write(kind="baseline", step=0, **baseline)
        return Started(ckpt, job, schedule, self.tokenizer)

    def finish(self, opts, started, metrics, log):
        task, ckpt, best_dir = self.task, started.ckpt, os.path.join(opts.out, BEST_DIR)
        main = task.metrics[0]
        result = dict(ckpt.extra["best"], best=best_dir, checkpoint=os.path.join(opts.out, CHECKPOINT_DIR),
                      stopped=False, task=task.name)
        log(f"best dev {main} {result[main]:.4f} (epoch {result['epoch']}); model saved to {best_dir}")
        if opts.test:
            result["test"] = evaluate_checkpoint(best_dir, task.name, opts.test, opts.eval_batch_size, self.max_len,
                                                 opts.qa(), opts.max_eval_examples)[0]
            log(f"test on {opts.test} with the best model (epoch {result['epoch']}): {format_scores(result['test'])}")
            metrics.write(kind="test", step=ckpt.position.step, split=opts.test, **result["test"])
        return result


class FinetuningJob(Job):
    """A task head trained end to end: the epoch's permutation of the training features, the
    dev set scored at each epoch's end, the best model so far kept in OUT/best."""
    name = "finetune"
    save_at_epoch_end = True

    def __init__(self, ckpt, task, tokenizer, train_set, dev_examples, dev_set, labels, opts, best_dir, metrics, log):
        self.ckpt, self.task, self.tokenizer, self.opts, self.best_dir = ckpt, task, tokenizer, opts, best_dir
        self.metrics, self.log = metrics, log
        self.train_set, self.dev_examples, self.dev_set, self.labels = train_set, dev_examples, dev_set, labels
        self.batches_per_epoch = math.ceil(len(train_set.features) / opts.batch_size)
        self.model_forward, self.model_backward = model_of(ckpt.config, task.head)

    def batches(self, epoch, start):
        features, pad_id = self.train_set.features, self.tokenizer.pad_token_id
        for rows in train_batches(len(features), self.opts.batch_size, self.opts.seed, epoch, start):
            yield make_batch([features[i] for i in rows], pad_id)

    def forward(self, params, batch, rng):
        return self.model_forward(params, self.ckpt.config, **batch, rng=rng)

    def backward(self, cache):
        return self.model_backward(1.0, cache)

    def step_metrics(self, out, batch):
        return dict(loss=float(out["loss"]))

    def describe(self, m, epoch):
        return f"epoch {epoch + 1} | loss {m['loss']:.4f}"

    def record(self, epoch):
        return dict(epoch=epoch + 1)

    def after_step(self, position, epoch_ended, done):
        if not epoch_ended:
            return
        ckpt, main = self.ckpt, self.task.metrics[0]
        scores, _ = evaluate_encoded(ckpt.params, ckpt.config, self.task, self.dev_examples, self.dev_set,
                                     self.labels, self.opts.eval_batch_size, self.tokenizer.pad_token_id,
                                     self.opts.qa())
        best = ckpt.extra.get("best")
        improved = best is None or scores[main] > best[main]
        self.log(f"  dev after epoch {position.epoch}: {format_scores(scores)}{'  (best so far)' if improved else ''}")
        self.metrics.write(kind="eval", step=position.step, epoch=position.epoch, **scores)
        if improved:
            ckpt.extra["best"] = dict(scores, epoch=position.epoch, step=position.step)
            save_pretrained(self.best_dir, ckpt.config, ckpt.params, self.tokenizer)


def check_options(opts: FinetuneOptions) -> None:
    """The numbers a run needs, checked before anything is read or written."""
    check_numbers(opts, positive=("epochs", "batch_size", "log_every", "eval_batch_size", "max_seq_length",
                                  "max_train_examples", "max_eval_examples", "doc_stride", "max_query_length",
                                  "n_best_size", "max_answer_length"),
                  counts=("save_every", "seed"),
                  fractions=("warmup_proportion", "hidden_dropout_prob", "attention_probs_dropout_prob"))
    if opts.features not in CHOICES:
        raise NpbertError(f"--features {opts.features!r} is not one of {', '.join(CHOICES)}")


def _default_split(task, split):
    if not task.generated:
        raise DataError(f"task {task.name} reads files: pass --{split} FILE")
    return split


def describe_head(task, labels) -> str:
    """What the run trains, for its first line: "BertForSequenceClassification, 12 labels"."""
    outputs = task.format.outputs_about or (count(len(labels), "label") if labels else None)
    return ", ".join(x for x in (task.head.architecture, outputs) if x)


def sequences(task, features) -> int:
    """The sequences the model reads: one per feature, C per feature for a head with choices."""
    return sum(len(f["input_ids"]) for f in features) if task.head.choices else len(features)


def count(n, noun) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


# --- the model to start from -----------------------------------------------------------------------

def start_model(opts, task, labels, log):
    """(config, params with a head, tokenizer): a checkpoint's BertModel, or a random one
    (--from-scratch); a checkpoint's own head is kept if it fits the task and --features, else a
    new one. The config records --features (and the model must have the hidden states it takes)."""
    if (opts.model is None) == (opts.from_scratch is None):
        raise NpbertError("give exactly one of --model CHECKPOINT_DIR and --from-scratch PRESET")
    num_labels = task.format.num_labels(labels)
    overrides = {k: getattr(opts, k) for k in ("hidden_dropout_prob", "attention_probs_dropout_prob")
                 if getattr(opts, k) is not None}
    if opts.from_scratch:
        tokenizer = scratch_tokenizer(opts, task)
        config = BertConfig.from_preset(opts.from_scratch, vocab_size=tokenizer.vocab_size, **overrides)
        params, saved = init_params(config, np.random.default_rng(opts.seed), np.float32, heads=False), {}
        log(f"from scratch: {opts.from_scratch} preset, random weights, vocabulary of {tokenizer.vocab_size:,}")
    else:
        loaded = load_pretrained(opts.model, strict=False)
        if loaded.tokenizer is None:
            raise CheckpointError(f"{opts.model} has no vocab.txt, so the task's texts cannot be tokenized")
        config, tokenizer = dataclasses.replace(loaded.config, **overrides), loaded.tokenizer
        params = {k: v for k, v in loaded.params.items() if k.startswith("bert.")}   # drop MLM/NSP heads
        saved = {k: v for k, v in loaded.params.items() if not k.startswith(("bert.", "cls."))}   # its task head
    features_named(opts.features, config.num_hidden_layers, "--features", NpbertError)   # states it has
    head = task.head
    if saved and keeps_head(saved, config, head, labels, num_labels, opts, log):
        params.update(saved)
        return config, params, tokenizer
    if opts.model:
        log(f"from {opts.model}: {config.num_hidden_layers} layers, hidden {config.hidden_size}; new "
            f"{head.architecture} head")
    config = with_features(config, opts.features)
    params.update(init_head(config, head, num_labels, np.random.default_rng([opts.seed, 2]), np.float32))
    return config, params, tokenizer


def keeps_head(saved, config, head, labels, num_labels, opts, log) -> bool:
    """A fine-tuned checkpoint's head is trained further if it is the same head with the same labels,
    reading the same features; another architecture's head, or one on other features, is dropped."""
    where = opts.model
    if config.extra.get("architectures") != [head.architecture]:
        log(f"from {where}: dropping its {', '.join(config.extra.get('architectures') or ['unknown'])} head")
        return False
    if config.extra.get(FIELD, FINE_TUNE) != opts.features:
        log(f"from {where}: dropping its head (--features {config.extra.get(FIELD, FINE_TUNE)}; this run: "
            f"{opts.features})")
        return False
    k = check_head(saved, config, head, where)             # a head that does not fit: an error
    same = k == num_labels and (labels is None or label_names_of(config) in (None, labels))
    log(f"from {where}: {'continuing its' if same else 'replacing its'} {head.architecture} head "
        f"({k} outputs{'' if same else f', the task has {num_labels}'})")
    return same


def scratch_tokenizer(opts, task):
    if opts.vocab:
        return BertTokenizer(opts.vocab)
    if task.name.startswith("builtin-"):
        from npbert.data.builtin_vocab import builtin_vocab
        return BertTokenizer(builtin_vocab())
    raise DataError(f"--from-scratch on {task.name} needs --vocab VOCAB_TXT (use the pretrained model's "
                    "vocab.txt, so the comparison differs only in the weights)")
