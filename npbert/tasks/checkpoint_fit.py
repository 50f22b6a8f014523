"""Does a fine-tuned checkpoint fit a task? Read from its config.json alone, before the weights
(a classifier's logits decoded as tags are nonsense): `npbert evaluate` and `npbert predict`."""
from __future__ import annotations

from npbert.config import BertConfig
from npbert.errors import CheckpointError
from npbert.heads.feature_based import feature_choice
from npbert.heads.params import label_names_of
from npbert.heads.registry import HEADS


def check_head_fits_task(config: BertConfig, task, where) -> None:
    """A fine-tuned checkpoint's config.json fits task (a tasks.registry.Task): the same head
    (architectures), what the task's format checks (a regression model for a regression task),
    for a task that fixes its labels the same label names (in any order: the checkpoint's order is
    the one used), and a feature-based choice npbert knows that fits its layers. A config that
    names no head is left to heads/params.py's check_head, which looks at the weights."""
    feature_choice(config, where)
    saved, wanted = config.extra.get("architectures") or [], task.head.architecture
    if saved and wanted not in saved:
        known = {h.architecture for h in HEADS.values()}
        hint = "" if set(saved) & known else \
            f" (it has no task head: fine-tune it first, npbert finetune --model {where} --task {task.name})"
        raise CheckpointError(f"{where} is a {'/'.join(saved)} checkpoint{hint}; task {task.name} needs a {wanted}")
    names = label_names_of(config)
    task.format.check_config(config, names, task.name, where)
    if task.labels is not None and names is not None and sorted(names) != sorted(task.labels):
        raise CheckpointError(f"{where} was fine-tuned with the labels {', '.join(names)}; task {task.name} has "
                              f"the labels {', '.join(task.labels)}")
