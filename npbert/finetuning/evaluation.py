"""A fine-tuned model at work: loaded for a task, run over encoded examples, its outputs turned
into predictions and metrics. `npbert evaluate`, `npbert predict` and the fine-tuning loop's dev
and test evaluations all go through here, on the inference path (npbert/inference.py's
task_inference); what differs between tasks is asked of the task's head (npbert/heads/: the model)
and format (npbert/tasks/formats.py: encoding, decoding, metrics).
"""
from __future__ import annotations

from npbert.checkpoint import load_pretrained
from npbert.errors import CheckpointError, DataError
from npbert.heads.params import check_head, label_names_of
from npbert.inference import task_inference
from npbert.tasks.checkpoint_fit import check_outputs_fit
from npbert.tasks.encoding import eval_batches, make_batch
from npbert.tasks.registry import get_task, read_examples


def label_names(task, train_examples) -> list | None:
    """The task's label names: fixed ones, else what its format reads from the training examples
    (tags with "O" first, numbers in numeric order). None for outputs that have no names."""
    return list(task.labels) if task.labels is not None else task.format.label_names(train_examples)


def majority_baseline(task, train_examples, dev_examples, labels=None) -> dict:
    """The task's metrics on dev for a model that ignores its input and always gives the most
    frequent training answer (the format says which: a label, a tag for every word, a choice, an
    answer text; the mean for regression): the bar fine-tuning has to clear."""
    guesses = task.format.baseline(train_examples, dev_examples)
    return task.format.score(dev_examples, guesses, labels, task.metrics)


def check_max_length(config, max_len):
    if max_len > config.max_position_embeddings:
        raise DataError(f"max_seq_length {max_len} is longer than the model's max_position_embeddings "
                        f"({config.max_position_embeddings})")


def format_scores(scores) -> str:
    return " | ".join(f"{k} {v:.4f}" for k, v in scores.items())


def run_model(params, config, head, features, batch_size, pad_id, forward=task_inference) -> tuple:
    """The model's outputs for every feature (without padding), in feature order, and the mean
    loss over the batches (None without labels). No dropout: the inference path (packed, no
    caches). forward(head, params, config, **batch) -> outputs: another path to compare with
    (benchmarks/eval_speed.py times the padded training forward against it)."""
    outputs, loss_sum, loss_n = [None] * len(features), 0.0, 0
    for rows in eval_batches(features, batch_size):
        feats = [features[i] for i in rows]
        out = forward(head, params, config, **make_batch(feats, pad_id))
        if out["loss"] is not None:
            loss_sum, loss_n = loss_sum + float(out["loss"]) * len(rows), loss_n + len(rows)
        for b, (i, f) in enumerate(zip(rows, feats)):
            outputs[i] = head.output_of(out, b, len(f["input_ids"]))
    return outputs, (loss_sum / loss_n if loss_n else None)


def evaluate_encoded(params, config, task, examples, encoded, labels, batch_size, pad_id, options=None):
    """-> (metrics, predictions) of the model on encoded examples (metrics empty without gold)."""
    outputs, loss = run_model(params, config, task.head, encoded.features, batch_size, pad_id)
    predictions = task.format.decode(examples, encoded, outputs, labels, options)
    scores = task.format.score(examples, predictions, labels, task.metrics) if task.format.has_gold(examples) else {}
    if loss is not None and scores:
        scores["loss"] = loss
    return scores, predictions


def load_finetuned(directory, task):
    """A fine-tuned checkpoint for task: (config, params, tokenizer, labels), with clear errors."""
    loaded = load_pretrained(directory, strict=False)
    if loaded.tokenizer is None:
        raise CheckpointError(f"{directory} has no vocab.txt, so texts cannot be tokenized")
    num_labels = check_head(loaded.params, loaded.config, task.head, directory)
    labels = label_names_of(loaded.config)
    check_outputs_fit(task, num_labels, labels, directory)
    return loaded.config, loaded.params, loaded.tokenizer, labels


def evaluate_checkpoint(directory, task_name, source, batch_size=64, max_seq_length=None, options=None,
                        max_examples=None) -> tuple:
    """-> (metrics, examples, predictions) of a fine-tuned checkpoint on a task file or split."""
    task = get_task(task_name)
    config, params, tokenizer, labels = load_finetuned(directory, task)
    examples = read_examples(task, source)[:max_examples]
    max_len = max_seq_length or task.max_seq_length
    check_max_length(config, max_len)
    encoded = task.format.encode(examples, tokenizer, max_len, labels, options)
    scores, predictions = evaluate_encoded(params, config, task, examples, encoded, labels, batch_size,
                                           tokenizer.pad_token_id, options)
    return scores, examples, predictions
