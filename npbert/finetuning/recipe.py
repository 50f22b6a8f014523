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

import os

from npbert.errors import DataError
from npbert.finetuning.evaluation import (check_max_length, evaluate_checkpoint, format_scores, label_names,
                                          majority_baseline)
from npbert.finetuning.finetune_options import FinetuneOptions
from npbert.finetuning.from_checkpoint import start_model
from npbert.finetuning.job import FinetuningJob, TaskInputs
from npbert.heads.feature_based import FEATURES, FINE_TUNE, frozen_names
from npbert.heads.params import finetuned_config
from npbert.option_declaration import check_ranges
from npbert.tasks.registry import get_task, read_examples
from npbert.tokenizer import BertTokenizer
from npbert.training.loop import Schedule
from npbert.training.progress import say
from npbert.training.run import Recipe, Started, run_training
from npbert.training.run_dir import CHECKPOINT_DIR
from npbert.training.state import start_training

BEST_DIR = "best"


# Options a resumed run may change: what is logged and saved, when it stops, the evaluation
# batch size and the test file scored at the end; not what it trains
# (npbert/training/training_options.py).
CHANGEABLE_ON_RESUME = ("out", "log_every", "save_every", "stop_after", "eval_batch_size", "test")


def finetune(opts: FinetuneOptions, resume=False, overwrite=False, log=say, given=None) -> dict:
    """Run (or resume) fine-tuning; returns the best dev metrics and where the model is.
    given: the options the user set (the CLI's typed flags); default, those that differ from
    FinetuneOptions' defaults. The task files, the model and every option are checked before
    anything is written (npbert/training/run.py)."""
    return run_training(FinetuningRecipe(), opts, resume, overwrite, log, given)


class FinetuningRecipe(Recipe):
    """Fine-tuning in the shared lifecycle: prepare() reads the task's examples and the model and
    encodes them (nothing written) and returns them, start() builds the job on them, finish()
    reports the best dev score and scores --test once."""
    kind, changeable = "finetune", CHANGEABLE_ON_RESUME

    def check(self, opts):
        check_options(opts)

    def paths(self, opts):
        return ("model", "vocab") if get_task(opts.task).generated else ("model", "vocab", "train", "dev", "test")

    def prepare(self, opts, saved, log):
        task = get_task(opts.task)
        max_len = opts.max_seq_length or task.max_seq_length
        train_examples = read_examples(task, opts.train or _default_split(task, "train"))[:opts.max_train_examples]
        dev_examples = read_examples(task, opts.dev or _default_split(task, "dev"))[:opts.max_eval_examples]
        for examples, split in ((train_examples, "training"), (dev_examples, "dev")):
            if not task.format.has_gold(examples):
                raise DataError(f"{examples[0]['where']}: task {task.name} needs labelled {split} examples")
        labels = label_names(task, train_examples)
        if saved is not None:
            config, params, tokenizer = saved.config, saved.params, BertTokenizer.from_pretrained(
                os.path.join(opts.out, CHECKPOINT_DIR))
        else:
            config, params, tokenizer = start_model(opts, task, labels, log)
        config = finetuned_config(config, task.head, task.format.saved_names(labels), opts.features)
        check_max_length(config, max_len)
        train_set = task.format.encode(train_examples, tokenizer, max_len, labels, opts.qa())
        dev_set = task.format.encode(dev_examples, tokenizer, max_len, labels, opts.qa())
        return opts, TaskInputs(task, max_len, labels, train_examples, dev_examples, train_set, dev_set, config, params,
                                tokenizer)

    def inputs(self, opts):
        return [] if get_task(opts.task).generated else [opts.train, opts.dev]

    def start(self, opts, saved, prepared: TaskInputs, metrics, log):
        task, labels = prepared.task, prepared.labels
        ckpt = saved or start_training(prepared.config, prepared.params, opts,
                                       frozen_names(prepared.config, prepared.params))
        ckpt.config = prepared.config
        job = FinetuningJob(ckpt, prepared, opts, os.path.join(opts.out, BEST_DIR), metrics, log)
        total = opts.epochs * job.batches_per_epoch
        schedule = Schedule(total, int(opts.warmup_proportion * total), opts.learning_rate, opts.max_grad_norm)
        log(f"fine-tuning for {task.name} ({describe_head(task, labels)}) on {len(prepared.train_examples):,} "
            f"examples ({count(sequences(task, prepared.train_set.features), 'sequence')}), dev "
            f"{len(prepared.dev_examples):,}: {count(opts.epochs, 'epoch')} of {count(job.batches_per_epoch, 'step')} "
            f"of {opts.batch_size}, peak lr {opts.learning_rate:g}, warmup {schedule.warmup_steps}")
        if opts.features != FINE_TUNE:
            log(f"feature-based ({opts.features}): the encoder is frozen; the head reads "
                f"{FEATURES[opts.features].about} and trains "
                f"{sum(p.size for p in ckpt.optimizer.m.values()):,} parameters")
        baseline = majority_baseline(task, prepared.train_examples, prepared.dev_examples, labels)
        log(f"dev baseline (always the most frequent training answer): {format_scores(baseline)}")
        if saved is None:
            metrics.write(kind="baseline", step=0, **baseline)
        return Started(ckpt, job, schedule, prepared.tokenizer)

    def finish(self, opts, started, metrics, log):
        task, max_len = started.job.inputs.task, started.job.inputs.max_len
        ckpt, best_dir = started.ckpt, os.path.join(opts.out, BEST_DIR)
        main = task.metrics[0]
        result = dict(ckpt.extra["best"], best=best_dir, checkpoint=os.path.join(opts.out, CHECKPOINT_DIR),
                      stopped=False, task=task.name)
        log(f"best dev {main} {result[main]:.4f} (epoch {result['epoch']}); model saved to {best_dir}")
        if opts.test:
            result["test"] = evaluate_checkpoint(best_dir, task.name, opts.test, opts.eval_batch_size, max_len,
                                                 opts.qa(), opts.max_eval_examples)[0]
            log(f"test on {opts.test} with the best model (epoch {result['epoch']}): {format_scores(result['test'])}")
            metrics.write(kind="test", step=ckpt.position.step, split=opts.test, **result["test"])
        return result


def check_options(opts: FinetuneOptions) -> None:
    """Every option in its range and choices (npbert/finetuning/finetune_options.py), checked
    before anything is read or written."""
    check_ranges(opts)


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
