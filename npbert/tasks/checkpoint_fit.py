"""Does a fine-tuned checkpoint fit a task? Read from its config.json alone, before the weights
(a classifier's logits decoded as tags are nonsense): `npbert evaluate` and `npbert predict`;
and its outputs, once its weights are read (finetuning/evaluation.py's load_finetuned)."""
from __future__ import annotations

from npbert.config import BertConfig
from npbert.errors import CheckpointError
from npbert.heads.feature_based import feature_choice
from npbert.heads.params import label_names_of
from npbert.heads.registry import HEADS


def check_head_fits_task(config: BertConfig, task, where) -> None:
    """A fine-tuned checkpoint's config.json fits task (a tasks.registry.Task): the same head
    (architectures), for a sequence task a regression model for a regression and a classifier
    for a classification, for a task that fixes its labels the same label names (in any order:
    the checkpoint's order is the one used), and a feature-based choice npbert knows that fits its
    layers. A config that names no head is left to heads/params.py's check_head, which looks at
    the weights."""
    feature_choice(config, where)
    saved, wanted = config.extra.get("architectures") or [], task.head.architecture
    if saved and wanted not in saved:
        known = {h.architecture for h in HEADS.values()}
        hint = "" if set(saved) & known else \
            f" (it has no task head: fine-tune it first, npbert finetune --model {where} --task {task.name})"
        raise CheckpointError(f"{where} is a {'/'.join(saved)} checkpoint{hint}; task {task.name} needs a {wanted}")
    names = label_names_of(config)
    check_problem_type(config, names, task, where)
    if task.labels is not None and names is not None and sorted(names) != sorted(task.labels):
        raise CheckpointError(f"{where} was fine-tuned with the labels {', '.join(names)}; task {task.name} has "
                              f"the labels {', '.join(task.labels)}")


def check_problem_type(config: BertConfig, names, task, where) -> None:
    """A regression model for a regression task, a classifier for a classification task (a
    format with no regression to tell, and a config without id2label, pass)."""
    regression = task.format.regression
    if regression is None or names is None:
        return
    problem = config.extra.get("problem_type") or ("regression" if len(names) == 1 else "classification")
    if (problem == "regression") != regression:
        raise CheckpointError(f"{where} is a {problem.replace('_', ' ')} model ({len(names)} output(s)); "
                              f"task {task.name} is {'regression' if regression else 'classification'}")


def check_outputs_fit(task, num_labels, labels, directory) -> None:
    """A fine-tuned checkpoint's outputs (num_labels, its id2label names) fit task's format: one
    for a regression, and a name for each where the outputs have names (labels, tags)."""
    if task.format.regression and num_labels != 1:
        raise CheckpointError(f"{directory} has {num_labels} outputs; the regression task {task.name} needs 1")
    if task.format.named_outputs and (labels is None or len(labels) != num_labels):
        raise CheckpointError(f"{directory}/config.json has no id2label for its {num_labels} outputs")
