"""The tasks npbert fine-tunes on, by name: which head, how to read them, their labels, their
metrics (the first is the one the best checkpoint is chosen by; the head computes them) and a default sequence length.

    npbert finetune --task sst-2 --train SST-2/train.tsv --dev SST-2/dev.tsv ...
    npbert finetune --task builtin-sentence          (generated: no files needed)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from npbert.data import builtin_tasks
from npbert.errors import DataError
from npbert.heads import choice, sequence, span, token
from npbert.tasks import glue
from npbert.tasks.conll import read_conll
from npbert.tasks.movie_reviews import LABELS as RT_LABELS
from npbert.tasks.movie_reviews import read_rt_polarity
from npbert.tasks.squad import read_squad
from npbert.tasks.swag import read_swag
from npbert.tasks.text_files import read_text_file

SEQUENCE, TOKEN, SPAN, CHOICE = (h.HEAD.kind for h in (sequence, token, span, choice))


@dataclass(frozen=True)
class Task:
    name: str
    kind: str                      # its head (npbert/heads/registry.py)
    read: Callable                 # path (or split name, if generated) -> list of examples
    metrics: tuple                 # metric names; metrics[0] picks the best checkpoint
    labels: tuple | None = None    # fixed label names; None: taken from the training examples
    regression: bool = False
    generated: bool = False        # train/dev/test are split names, not files
    max_seq_length: int = 128
    about: str = ""


def _glue(name, metrics, about):
    read = (lambda path: glue.read_glue(name.removesuffix("-mm"), path))
    labels = glue.LABELS[name.removesuffix("-mm")]
    return Task(name, SEQUENCE, read, metrics, labels, regression=labels is None, about=about)


def _builtin(name, kind, metrics, about, max_seq_length=64):
    return Task(name, kind, lambda split: builtin_tasks.read(name, split), metrics, builtin_tasks.labels(name), generated=True,
                max_seq_length=max_seq_length, about=about)


ACCURACY = ("accuracy",)
TASKS = {t.name: t for t in [
    _glue("sst-2", ACCURACY, "GLUE SST-2 sentiment, TSV (sentence, label)"),
    _glue("cola", ("mcc", "accuracy"), "GLUE CoLA acceptability, TSV without header (source, label, -, sentence)"),
    _glue("mrpc", ("f1", "accuracy"), "GLUE MRPC paraphrase, TSV (Quality, #1 String, #2 String)"),
    _glue("sts-b", ("spearman", "pearson"), "GLUE STS-B similarity 0-5, regression, TSV"),
    _glue("qqp", ("f1", "accuracy"), "GLUE QQP duplicate questions, TSV"),
    _glue("mnli", ACCURACY, "GLUE MNLI entailment, TSV (dev_matched.tsv)"),
    _glue("mnli-mm", ACCURACY, "GLUE MNLI entailment, mismatched dev (dev_mismatched.tsv)"),
    _glue("qnli", ACCURACY, "GLUE QNLI question/sentence entailment, TSV"),
    _glue("rte", ACCURACY, "GLUE RTE entailment, TSV"),
    _glue("wnli", ACCURACY, "GLUE WNLI, TSV"),
    Task("classification", SEQUENCE, read_text_file, ("accuracy", "macro_f1"),
         about="CSV (header) or .jsonl with text, optional text_pair, label; labels from the training file"),
    Task("regression", SEQUENCE, read_text_file, ("spearman", "pearson"), regression=True,
         about="CSV or .jsonl with text, optional text_pair, a numeric label"),
    Task("conll", TOKEN, read_conll, ("entity_f1", "token_accuracy"),
         about="CoNLL-2003 style: word ... tag per line, blank line between sentences"),
    Task("squad", SPAN, read_squad, ("f1", "exact_match"), max_seq_length=384,
         about="SQuAD v1.1 JSON"),
    Task("swag", CHOICE, read_swag, ACCURACY, about="SWAG CSV (sent1, sent2, ending0-3, label)"),
    Task("rt-polarity", SEQUENCE, read_rt_polarity, ("accuracy", "macro_f1"), RT_LABELS,
         generated=True, max_seq_length=64, about="Rotten Tomatoes sentences (movie-reviews package), 80/10/10"),
    _builtin("builtin-sentence", SEQUENCE, ACCURACY, "built-in: profession of a sentence (12)"),
    _builtin("builtin-pair", SEQUENCE, ACCURACY, "built-in: entailment of a fact (3)"),
    _builtin("builtin-tagging", TOKEN, ("entity_f1", "token_accuracy"), "built-in: PER/LOC/ORG"),
    _builtin("builtin-qa", SPAN, ("f1", "exact_match"), "built-in: questions on a story", 128),
    _builtin("builtin-choice", CHOICE, ACCURACY, "built-in: the sentence that continues (4)"),
    _builtin("builtin-qnli", SEQUENCE, ACCURACY, "built-in: does the sentence answer the question (2)"),
]}


def get_task(name) -> Task:
    if name not in TASKS:
        raise DataError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    return TASKS[name]


def read_examples(task: Task, source) -> list:
    """The examples of a file (or, for a generated task, a split name)."""
    if source is None:
        raise DataError(f"task {task.name} needs a file to read")
    examples = task.read(source)
    if not examples:
        raise DataError(f"{source} holds no examples")
    return examples
