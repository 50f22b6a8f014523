"""The built-in corpus's labelled tasks (npbert/data/builtin_tasks.py) under task names, with
labels as names, so every head can be tried with no download:

    builtin-sentence   topic: the profession a sentence is about (12 classes)
    builtin-pair       facts: does the hypothesis follow from the introduction? (MNLI-like)
    builtin-tagging    entities: BIO tags for PER, LOC, ORG (CoNLL-like)
    builtin-qa         qa: questions on a story (SQuAD-like)
    builtin-choice     which sentence continues the introduction? (SWAG-like; builtin_choice.py)
    builtin-qnli       does the sentence answer the question? (QNLI-like; builtin_qnli.py)

"Files" are the split names train, dev and test; each split comes from other documents.
"""
from __future__ import annotations

from npbert.data import builtin_tasks
from npbert.errors import DataError
from npbert.tasks.builtin_choice import choice_examples
from npbert.tasks.builtin_qnli import LABELS as QNLI_LABELS
from npbert.tasks.builtin_qnli import qnli_examples

GENERATED = {"builtin-sentence": "topic", "builtin-pair": "facts", "builtin-tagging": "entities", "builtin-qa": "qa"}
SPLITS = tuple(builtin_tasks.SPLITS)


def read_builtin(task, split, num_documents=None) -> list:
    if split not in SPLITS:
        raise DataError(f"{task} has the splits {', '.join(SPLITS)}, not {split!r} (it is generated, not read)")
    if task == "builtin-choice":
        records = choice_examples(split, num_documents)
    elif task == "builtin-qnli":
        records = [dict(r, label=QNLI_LABELS[r["label"]]) for r in qnli_examples(split, num_documents)]
    else:
        name = GENERATED[task]
        records = builtin_tasks.make_task(name, split, num_documents)
        names = builtin_tasks.label_names(name)
        if name in ("topic", "facts"):
            records = [dict(text=r["text"], text_pair=r.get("text_pair"), label=names[r["label"]]) for r in records]
    return [dict(r, where=f"{task} {split} example {i + 1}") for i, r in enumerate(records)]


def builtin_labels(task):
    if task == "builtin-qnli":
        return QNLI_LABELS
    name = GENERATED.get(task)
    return tuple(builtin_tasks.label_names(name)) if name in ("topic", "facts", "entities") else None
