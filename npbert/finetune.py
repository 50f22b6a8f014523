"""Fine-tuning: a pretrained BERT + a task head, trained end to end on a labelled task.

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
from npbert.optim import AdamW, clip_by_global_norm, linear_warmup_decay
from npbert.task_models import ARCHITECTURES, MODELS, check_head, finetuned_config, init_head, label_names_of
from npbert.tasks.encoding import eval_batches, make_batch, train_batches
from npbert.tasks.pipeline import QAOptions, decode, encode, has_gold, score
from npbert.tasks.registry import get_task, label_names, read_examples
from npbert.tokenization import BertTokenizer
from npbert.train import (MetricsLog, Position, StopOnInterrupt, Throughput, TrainingCheckpoint, check_finite, say,
                          format_eta, load_training_checkpoint, prepare_output_dir, save_training_checkpoint)

CHECKPOINT_DIR, BEST_DIR, METRICS_FILE = "checkpoint", "best", "metrics.jsonl"
REGRESSION_LABELS = ["LABEL_0"]          # Hugging Face's name for the one output of a regression head


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
    stop_after: int | None = None        # stop (and save) after this many steps: for tests of resume

    def qa(self) -> QAOptions:
        return QAOptions(self.doc_stride, self.max_query_length, self.n_best_size, self.max_answer_length)


def finetune(opts: FinetuneOptions, resume=False, overwrite=False, log=say) -> dict:
    """Run (or resume) fine-tuning; returns the best dev metrics and where the model is."""
    prepare_output_dir(opts.out, resume, overwrite)
    ckpt_dir, best_dir = os.path.join(opts.out, CHECKPOINT_DIR), os.path.join(opts.out, BEST_DIR)
    if resume:
        if not os.path.isdir(ckpt_dir):
            raise NpbertError(f"nothing to resume: {ckpt_dir} does not exist")
        saved = load_training_checkpoint(ckpt_dir, {})
        opts = FinetuneOptions(**{**saved.options, "stop_after": opts.stop_after})
        saved.optimizer.weight_decay = opts.weight_decay
        config, params, tokenizer = saved.config, saved.params, BertTokenizer.from_pretrained(ckpt_dir)
        log(f"resuming {opts.out} at step {saved.position.step}")
    task = get_task(opts.task)
    if opts.epochs < 1 or opts.batch_size < 1:
        raise NpbertError(f"epochs and batch size must be at least 1, got {opts.epochs} and {opts.batch_size}")
    max_len = opts.max_seq_length or task.max_seq_length
    train_examples = read_examples(task, opts.train or _default_split(task, "train"))[:opts.max_train_examples]
    dev_examples = read_examples(task, opts.dev or _default_split(task, "dev"))[:opts.max_eval_examples]
    labels = label_names(task, train_examples)
    if resume:
        optimizer, position, rng, extra = saved.optimizer, saved.position, saved.rng, saved.extra
    else:
        config, params, tokenizer = start_model(opts, task, labels, log)
        optimizer, position, rng, extra = AdamW(params, weight_decay=opts.weight_decay), Position(), \
            np.random.default_rng([opts.seed, 1]), {}
    config = finetuned_config(config, task.kind, REGRESSION_LABELS if task.regression else labels)
    check_max_length(config, max_len)
    train = encode(task, train_examples, tokenizer, max_len, labels, opts.qa())
    dev = encode(task, dev_examples, tokenizer, max_len, labels, opts.qa())
    for examples, split in ((train_examples, "training"), (dev_examples, "dev")):
        if not has_gold(task, examples):
            raise DataError(f"{examples[0]['where']}: task {task.name} needs labelled {split} examples")
    n, bs = len(train.features), opts.batch_size
    steps_per_epoch = math.ceil(n / bs)
    total = opts.epochs * steps_per_epoch
    warmup = int(opts.warmup_proportion * total)
    forward, backward = MODELS[task.kind]
    options = dataclasses.asdict(opts)
    options.pop("stop_after")
    metrics = MetricsLog(os.path.join(opts.out, METRICS_FILE), truncate_after_step=position.step if resume else None)
    main = task.metrics[0]
    log(f"fine-tuning for {task.name} ({task.kind}, {len(labels) if labels else 'no'} labels) on "
        f"{len(train_examples):,} examples ({n:,} sequences), dev {len(dev_examples):,}: {opts.epochs} epochs of "
        f"{steps_per_epoch} steps of {bs}, peak lr {opts.learning_rate:g}, warmup {warmup}")

    def save():
        extra["window"] = list(losses)                 # losses not yet logged: a resumed log reads as one run
        save_training_checkpoint(ckpt_dir, TrainingCheckpoint(config, params, optimizer, position, rng, options, extra),
                                 tokenizer)

    speed, losses = Throughput(), extra.pop("window", [])
    with StopOnInterrupt() as stop:
        while position.epoch < opts.epochs:
            for rows in train_batches(n, bs, opts.seed, position.epoch, position.batch):
                batch = make_batch([train.features[i] for i in rows], tokenizer.pad_token_id)
                lr = linear_warmup_decay(position.step, opts.learning_rate, warmup, total)
                out, cache = forward(params, config, **batch, rng=rng)
                check_finite(out["loss"], position.step + 1)
                grads = backward(cache)
                grad_norm = clip_by_global_norm(grads, opts.max_grad_norm)
                optimizer.step(params, grads, lr)
                position.step, position.batch = position.step + 1, position.batch + 1
                losses.append(float(out["loss"]))
                speed.add(int(batch["attention_mask"].sum()))
                if position.step % opts.log_every == 0 or position.step == total:
                    tokens_per_s, eta = speed.report(total - position.step)
                    loss = float(np.mean(losses))
                    losses.clear()
                    log(f"step {position.step:>5}/{total} | epoch {position.epoch + 1} | loss {loss:.4f} | "
                        f"lr {lr:.2e} | {tokens_per_s:,.0f} tok/s | ETA {format_eta(eta)}")
                    metrics.write(kind="train", step=position.step, epoch=position.epoch + 1, loss=loss, lr=lr,
                                  grad_norm=grad_norm, tokens_per_s=tokens_per_s)
                if stop.requested or (opts.stop_after is not None and position.step >= opts.stop_after):
                    save()
                    log(f"stopped at step {position.step}; saved {ckpt_dir}; continue with "
                        f"`npbert finetune --out {opts.out} --resume`")
                    return dict(stopped=True, step=position.step, checkpoint=ckpt_dir)
            position.epoch, position.batch = position.epoch + 1, 0
            scores, _ = evaluate_encoded(params, config, task, dev_examples, dev, labels, opts.eval_batch_size,
                                         tokenizer.pad_token_id, opts.qa())
            best = extra.get("best")
            improved = best is None or scores[main] > best[main]
            note = "  (best so far)" if improved else ""
            log(f"  dev after epoch {position.epoch}: {format_scores(scores)}{note}")
            metrics.write(kind="eval", step=position.step, epoch=position.epoch, **scores)
            if improved:
                extra["best"] = dict(scores, epoch=position.epoch, step=position.step)
                save_pretrained(best_dir, config, params, tokenizer)
            save()
    result = dict(extra["best"], best=best_dir, checkpoint=ckpt_dir, stopped=False, task=task.name)
    log(f"best dev {main} {result[main]:.4f} (epoch {result['epoch']}); model saved to {best_dir}")
    if opts.test:
        result["test"] = evaluate_checkpoint(best_dir, task.name, opts.test, opts.eval_batch_size, max_len,
                                             opts.qa(), opts.max_eval_examples)[0]
        log(f"test ({opts.test}) with the best model: {format_scores(result['test'])}")
        metrics.write(kind="test", step=position.step, **result["test"])
    return result


def _default_split(task, split):
    if not task.generated:
        raise DataError(f"task {task.name} reads files: pass --{split} FILE")
    return split


def check_max_length(config, max_len):
    if max_len > config.max_position_embeddings:
        raise DataError(f"max_seq_length {max_len} is longer than the model's max_position_embeddings "
                        f"({config.max_position_embeddings})")


def format_scores(scores) -> str:
    return " | ".join(f"{k} {v:.4f}" for k, v in scores.items())


# --- the model to start from -----------------------------------------------------------------------

def start_model(opts, task, labels, log):
    """(config, params with a head, tokenizer): a checkpoint's BertModel, or a random one
    (--from-scratch); a checkpoint's own head is kept if it fits the task, else a new one."""
    if (opts.model is None) == (opts.from_scratch is None):
        raise NpbertError("give exactly one of --model CHECKPOINT_DIR and --from-scratch PRESET")
    num_labels = 1 if task.regression else len(labels) if labels else 2
    overrides = {k: getattr(opts, k) for k in ("hidden_dropout_prob", "attention_probs_dropout_prob")
                 if getattr(opts, k) is not None}
    if opts.from_scratch:
        tokenizer = scratch_tokenizer(opts, task)
        config = BertConfig.from_preset(opts.from_scratch, vocab_size=tokenizer.vocab_size, **overrides)
        params = init_params(config, np.random.default_rng(opts.seed), np.float32, heads=False)
        log(f"from scratch: {opts.from_scratch} preset, random weights, vocabulary of {tokenizer.vocab_size:,}")
    else:
        loaded = load_pretrained(opts.model, strict=False)
        if loaded.tokenizer is None:
            raise CheckpointError(f"{opts.model} has no vocab.txt, so the task's texts cannot be tokenized")
        config, tokenizer = dataclasses.replace(loaded.config, **overrides), loaded.tokenizer
        params = {k: v for k, v in loaded.params.items() if k.startswith("bert.")}   # drop MLM/NSP heads
        head = {k: v for k, v in loaded.params.items() if not k.startswith(("bert.", "cls."))}
        if head and keeps_head(head, config, task, labels, num_labels, opts.model, log):
            params.update(head)
            return config, params, tokenizer
        log(f"from {opts.model}: {config.num_hidden_layers} layers, hidden {config.hidden_size}; new "
            f"{task.kind} head")
    params.update(init_head(config, task.kind, num_labels, np.random.default_rng([opts.seed, 2]), np.float32))
    return config, params, tokenizer


def keeps_head(head, config, task, labels, num_labels, where, log) -> bool:
    """A fine-tuned checkpoint's head is trained further if it is the same head with the same labels;
    another architecture's head is dropped."""
    if config.extra.get("architectures") != [ARCHITECTURES[task.kind]]:
        log(f"from {where}: dropping its {', '.join(config.extra.get('architectures') or ['unknown'])} head")
        return False
    k = check_head(head, config, task.kind, where)             # a head that does not fit: an error
    same = k == num_labels and (labels is None or label_names_of(config) in (None, labels))
    log(f"from {where}: {'continuing its' if same else 'replacing its'} {task.kind} head "
        f"({k} outputs{'' if same else f', the task has {num_labels}'})")
    return same


def scratch_tokenizer(opts, task):
    if opts.vocab:
        return BertTokenizer(opts.vocab)
    if task.name.startswith("builtin-"):
        from npbert.data.builtin_corpus import builtin_vocab
        return BertTokenizer(builtin_vocab())
    raise DataError(f"--from-scratch on {task.name} needs --vocab VOCAB_TXT (use the pretrained model's "
                    "vocab.txt, so the comparison differs only in the weights)")


# --- evaluation ------------------------------------------------------------------------------------

def run_model(params, config, kind, features, batch_size, pad_id) -> tuple:
    """The model's outputs for every feature (without padding), in feature order, and the mean
    loss over the batches (None without labels). No dropout."""
    forward, _ = MODELS[kind]
    outputs, loss_sum, loss_n = [None] * len(features), 0.0, 0
    for rows in eval_batches(features, batch_size):
        feats = [features[i] for i in rows]
        out, _ = forward(params, config, **make_batch(feats, pad_id), rng=None)
        if out["loss"] is not None:
            loss_sum, loss_n = loss_sum + float(out["loss"]) * len(rows), loss_n + len(rows)
        for b, (i, f) in enumerate(zip(rows, feats)):
            T = len(f["input_ids"]) if kind != "multiple_choice" else None
            outputs[i] = dict(sequence_classification=lambda: out["logits"][b],
                              multiple_choice=lambda: out["logits"][b],
                              token_classification=lambda: out["logits"][b, :T],
                              question_answering=lambda: (out["start_logits"][b, :T], out["end_logits"][b, :T]))[kind]()
    return outputs, (loss_sum / loss_n if loss_n else None)


def evaluate_encoded(params, config, task, examples, encoded, labels, batch_size, pad_id, qa_options):
    """-> (metrics, predictions) of the model on encoded examples (metrics empty without gold)."""
    outputs, loss = run_model(params, config, task.kind, encoded.features, batch_size, pad_id)
    predictions = decode(task, examples, encoded, outputs, labels, qa_options)
    scores = score(task, examples, predictions, labels) if has_gold(task, examples) else {}
    if loss is not None and scores:
        scores["loss"] = loss
    return scores, predictions


def load_finetuned(directory, task):
    """A fine-tuned checkpoint for task: (config, params, tokenizer, labels), with clear errors."""
    loaded = load_pretrained(directory, strict=False)
    if loaded.tokenizer is None:
        raise CheckpointError(f"{directory} has no vocab.txt, so texts cannot be tokenized")
    num_labels = check_head(loaded.params, loaded.config, task.kind, directory)
    labels = label_names_of(loaded.config)
    if task.kind in ("sequence_classification", "token_classification") and not task.regression:
        if labels is None or len(labels) != num_labels:
            raise CheckpointError(f"{directory}/config.json has no id2label for its {num_labels} outputs")
    if task.regression and num_labels != 1:
        raise CheckpointError(f"{directory} has {num_labels} outputs; the regression task {task.name} needs 1")
    return loaded.config, loaded.params, loaded.tokenizer, labels


def evaluate_checkpoint(directory, task_name, source, batch_size=64, max_seq_length=None, qa_options=None,
                        max_examples=None) -> tuple:
    """-> (metrics, examples, predictions) of a fine-tuned checkpoint on a task file or split."""
    task = get_task(task_name)
    config, params, tokenizer, labels = load_finetuned(directory, task)
    examples = read_examples(task, source)[:max_examples]
    max_len = max_seq_length or task.max_seq_length
    check_max_length(config, max_len)
    encoded = encode(task, examples, tokenizer, max_len, labels, qa_options)
    scores, predictions = evaluate_encoded(params, config, task, examples, encoded, labels, batch_size,
                                           tokenizer.pad_token_id, qa_options)
    return scores, examples, predictions
