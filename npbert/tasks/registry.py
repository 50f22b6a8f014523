"""The tasks npbert fine-tunes on, by name: their head (npbert/heads/), the format of their
examples (formats.py: encoding, decoding, metrics), how to read them, their labels, their
metrics (the first is the one the best checkpoint is chosen by) and a default sequence length.

    npbert finetune --task sst-2 --train SST-2/train.tsv --dev SST-2/dev.tsv ...
    npbert finetune --task builtin-sentence          (generated: no files needed)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from npbert.data import builtin_tasks
from npbert.errors import DataError
from npbert.heads import choice, sequence, span, token
from npbert.heads.head import Head
from npbert.tasks import glue
from npbert.tasks.conll import read_conll
from npbert.tasks.formats import CHOICES, SCORES, SENTENCES, SPANS, TAGS, Format
from npbert.tasks.movie_reviews import LABELS as RT_LABELS
from npbert.tasks.movie_reviews import read_rt_polarity
from npbert.tasks.squad import read_squad
from npbert.tasks.swag import read_swag
from npbert.tasks.text_files import read_text_file

SEQUENCE, TOKEN, SPAN, CHOICE = sequence.HEAD, token.HEAD, span.HEAD, choice.HEAD     # the heads the tasks use


@dataclass(frozen=True)
class Task:
    name: str
    head: Head                     # its layers and loss (npbert/heads/)
    format: Format                 # what its examples are (formats.py)
    read: Callable                 # path (or split name, if generated) -> list of examples
    metrics: tuple                 # metric names; metrics[0] picks the best checkpoint
    labels: tuple | None = None    # fixed label names; None: taken from the training examples
    generated: bool = False        # train/dev/test are split names, not files
    max_seq_length: int = 128
    about: str = ""


def _glue(name, metrics, about):
    read = (lambda path: glue.read_glue(name.removesuffix("-mm"), path))
    labels = glue.LABELS[name.removesuffix("-mm")]
    return Task(name, SEQUENCE, SCORES if labels is None else SENTENCES, read, metrics, labels, about=about)


def _builtin(name, head, format, metrics, about, max_seq_length=64):
    return Task(name, head, format, lambda split: builtin_tasks.read(name, split), metrics, builtin_tasks.labels(name),
                generated=True, max_seq_length=max_seq_length, about=about)


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
    Task("classification", SEQUENCE, SENTENCES, read_text_file, ("accuracy", "macro_f1"),
         about="CSV (header) or .jsonl with text, optional text_pair, label; labels from the training file"),
    Task("regression", SEQUENCE, SCORES, read_text_file, ("spearman", "pearson"),
         about="CSV or .jsonl with text, optional text_pair, a numeric label"),
    Task("conll", TOKEN, TAGS, read_conll, ("entity_f1", "token_accuracy"),
         about="CoNLL-2003 style: word ... tag per line, blank line between sentences"),
    Task("squad", SPAN, SPANS, read_squad, ("f1", "exact_match"), max_seq_length=384,
         about="SQuAD v1.1 JSON"),
    Task("swag", CHOICE, CHOICES, read_swag, ACCURACY, about="SWAG CSV (sent1, sent2, ending0-3, label)"),
    Task("rt-polarity", SEQUENCE, SENTENCES, read_rt_polarity, ("accuracy", "macro_f1"), RT_LABELS,
         generated=True, max_seq_length=64, about="Rotten Tomatoes sentences (movie-reviews package), 80/10/10"),
    _builtin("builtin-sentence", SEQUENCE, SENTENCES, ACCURACY, "built-in: profession of a sentence (12)"),
    _builtin("builtin-pair", SEQUENCE, SENTENCES, ACCURACY, "built-in: entailment of a fact (3)"),
    _builtin("builtin-tagging", TOKEN, TAGS, ("entity_f1", "token_accuracy"), "built-in: PER/LOC/ORG"),
    _builtin("builtin-qa", SPAN, SPANS, ("f1", "exact_match"), "built-in: questions on a story", 128),
    _builtin("builtin-choice", CHOICE, CHOICES, ACCURACY, "built-in: the sentence that continues (4)"),
    _builtin("builtin-qnli", SEQUENCE, SENTENCES, ACCURACY, "built-in: does the sentence answer the question (2)"),
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
