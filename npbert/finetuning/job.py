"""The fine-tuning Job the shared loop runs (npbert/training/loop.py): a task model (npbert/heads/)
trained on the epoch's permutation of the training features, the dev set scored at each epoch's
end and the best model so far kept in OUT/best. The step runs BertModel on the packed layout
where the head allows (model_of)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from npbert.checkpoint import save_pretrained
from npbert.config import BertConfig
from npbert.finetuning.evaluation import evaluate_encoded, format_scores
from npbert.heads.task_model import model_of
from npbert.tasks.encoding import Encoded, make_batch, train_batches
from npbert.tokenizer import BertTokenizer
from npbert.training.loop import Job


@dataclass
class TaskInputs:
    """What a run's prepare() read and checked, for start() and the job: the task's examples,
    encoded, and the model the run starts from (its config records the head)."""
    task: object                         # a tasks.registry.Task
    max_len: int
    labels: list | None                  # the outputs' names (None: a head whose outputs have none)
    train_examples: list
    dev_examples: list
    train_set: Encoded
    dev_set: Encoded
    config: BertConfig
    params: dict
    tokenizer: BertTokenizer


class FinetuningJob(Job):
    """A task head trained end to end (or on frozen features): the epoch's permutation of the
    training features, the dev set scored at each epoch's end, the best model so far kept in
    best_dir."""
    save_at_epoch_end = True

    def __init__(self, ckpt, inputs: TaskInputs, opts, best_dir, metrics, log):
        self.ckpt, self.inputs, self.opts, self.best_dir = ckpt, inputs, opts, best_dir
        self.metrics, self.log = metrics, log
        self.batches_per_epoch = math.ceil(len(inputs.train_set.features) / opts.batch_size)
        self.model_forward, self.model_backward = model_of(ckpt.config, inputs.task.head)

    def batches(self, epoch, start):
        features, pad_id = self.inputs.train_set.features, self.inputs.tokenizer.pad_token_id
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
        ckpt, inputs, main = self.ckpt, self.inputs, self.inputs.task.metrics[0]
        scores, _ = evaluate_encoded(ckpt.params, ckpt.config, inputs.task, inputs.dev_examples, inputs.dev_set,
                                     inputs.labels, self.opts.eval_batch_size, inputs.tokenizer.pad_token_id,
                                     self.opts.qa())
        best = ckpt.extra.get("best")
        improved = best is None or scores[main] > best[main]
        self.log(f"  dev after epoch {position.epoch}: {format_scores(scores)}{'  (best so far)' if improved else ''}")
        self.metrics.write(kind="eval", step=position.step, epoch=position.epoch, **scores)
        if improved:
            ckpt.extra["best"] = dict(scores, epoch=position.epoch, step=position.step)
            save_pretrained(self.best_dir, ckpt.config, ckpt.params, inputs.tokenizer)
