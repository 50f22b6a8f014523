"""The built-in tasks: labelled fine-tuning tasks made from the built-in corpus's world
(builtin_corpus.py, docs/builtin_corpus.md), so every head can be tried with no download. One
table, by task name:

    builtin-sentence   the profession a sentence is about (12 classes; SST-2-like)   stories.py
    builtin-pair       does the hypothesis follow from the introduction? (MNLI-like) stories.py
    builtin-tagging    BIO tags for PER, LOC, ORG (CoNLL-like)                        stories.py
    builtin-qa         questions on a story (SQuAD-like)                              stories.py
    builtin-choice     which sentence continues the introduction? (SWAG-like)        choice.py
    builtin-qnli       does the sentence answer the question? (QNLI-like)            qnli.py

Each is a function of a split's stories and its own random stream; the "files" are the split
names train, dev and test, made from different stories. make_task gives the records with class
ids, read (what `npbert finetune --task builtin-*` reads) with label names and a "where".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from npbert.data import builtin_corpus as world
from npbert.data.builtin_tasks import stories
from npbert.data.builtin_tasks.choice import choice_examples
from npbert.data.builtin_tasks.qnli import LABELS as QNLI_LABELS
from npbert.data.builtin_tasks.qnli import qnli_examples
from npbert.errors import DataError

SPLITS = {"train": 1, "dev": 2, "test": 3}
DEFAULT_NUM_DOCUMENTS = {"train": 2000, "dev": 250, "test": 250}


@dataclass(frozen=True)
class BuiltinTask:
    make: Callable               # (the split's documents, its Generator) -> records, labels as class ids
    labels: tuple | None         # the names of the class ids (tags: the tag set), or None
    seed: int                    # the task's own random stream; each task its own


TASKS = {
    "builtin-sentence": BuiltinTask(stories.topic_examples, tuple(p.job for p in world.PROFESSIONS), 0),
    "builtin-pair": BuiltinTask(stories.facts_examples, stories.FACT_LABELS, 1),
    "builtin-tagging": BuiltinTask(stories.entity_examples, stories.ENTITY_TAGS, 2),
    "builtin-qa": BuiltinTask(stories.qa_examples, None, 3),
    "builtin-choice": BuiltinTask(choice_examples, None, 4),
    "builtin-qnli": BuiltinTask(qnli_examples, QNLI_LABELS, 5),
}
TASK_TEXTS = stories.STATED + stories.UNSTATED + tuple(q for q, _, _ in stories.QUESTIONS)   # for builtin_vocab


def split_documents(split, num_documents, seed, task_seed):
    """(the split's stories, the task's Generator): the stories depend on (seed, split) only, so
    every task of a split reads the same ones; task_seed gives each task its own random stream."""
    documents = world.generate_documents(num_documents or DEFAULT_NUM_DOCUMENTS[split], [seed, SPLITS[split]])
    return documents, np.random.default_rng([seed, SPLITS[split], task_seed])


def make_task(name, split, num_documents=None, seed=0) -> list:
    """The records of one split of a built-in task, labels as class ids (deterministic)."""
    if name not in TASKS:
        raise DataError(f"unknown built-in task {name!r}; choose one of {', '.join(TASKS)}")
    if split not in SPLITS:
        raise DataError(f"{name} has the splits {', '.join(SPLITS)}, not {split!r} (it is generated, not read)")
    return TASKS[name].make(*split_documents(split, num_documents, seed, TASKS[name].seed))


def read(name, split, num_documents=None) -> list:
    """The records as a task file's: labels by name, and where each comes from."""
    names = TASKS[name].labels
    return [dict(r, label=names[r["label"]], where=f"{name} {split} example {i + 1}") if "label" in r and names
            else dict(r, where=f"{name} {split} example {i + 1}")
            for i, r in enumerate(make_task(name, split, num_documents))]


def labels(name):
    """The task's label names (tags for builtin-tagging), or None (QA, multiple choice)."""
    return TASKS[name].labels
