"""`npbert finetune`: a checkpoint (or a random model) + a task head, trained on a labelled task."""
from npbert.commands.option_arguments import add_options
from npbert.commands.training_args import add_run_arguments


def register(sub):
    from npbert.finetuning.recipe import FinetuneOptions, finetune
    from npbert.tasks.registry import TASKS
    p = sub.add_parser("finetune", help="fine-tune a checkpoint on a task (GLUE, CoNLL, SQuAD, SWAG, CSV, built-in)",
                       description="Fine-tune BERT on a labelled task, evaluating on the dev set after each epoch "
                                   "and keeping the best model in OUT/best. Tasks: " +
                                   "; ".join(f"{t.name}: {t.about}" for t in TASKS.values()))
    add_options(p, FinetuneOptions)
    add_run_arguments(p, finetune, FinetuneOptions)
