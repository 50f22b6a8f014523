"""The options of `npbert finetune`, declared once (npbert/option_declaration.py), in the order
--help lists them: the task and the model, the data, the schedule and optimizer
(npbert/training/training_options.py), the feature-based choice, dropout, evaluation, QA's
windows (npbert/tasks/qa.py) and the run controls."""
from __future__ import annotations

from npbert.config import PRESETS
from npbert.heads.feature_based import CHOICES, FINE_TUNE
from npbert.option_declaration import POSITIVE, PROBABILITY, Option, options_record
from npbert.tasks.qa import QA_OPTIONS, QAOptions
from npbert.tasks.registry import TASKS
from npbert.training.training_options import dropout_options, optimizer_options, run_options

# The paper's recipe (batch 32, 3 epochs, 10% warmup, weight decay 0.01, clip 1.0) except the
# learning rate: npbert/finetuning/recipe.py says why 1e-4.
FINETUNE_OPTIONS = (
    # the registry itself, not a copy: a task registered later (tests/finetuning/test_adding_a_head.py) is a choice too
    Option("task", "builtin-sentence", "the task (listed above)", choices=TASKS, metavar="TASK"),
    Option("model", None, "checkpoint directory to start from (npbert or Hugging Face); this or --from-scratch "
                          "(default: none)"),
    Option("from_scratch", None, "start from random weights of this preset instead of --model (default: none)",
           choices=tuple(PRESETS)),
    Option("vocab", None, "vocab.txt for --from-scratch (default: the built-in one for built-in tasks)"),
    Option("train", None, "training file; a split name for generated tasks (default: train for those)"),
    Option("dev", None, "dev file, evaluated each epoch; a split name for generated tasks (default: dev for those)"),
    Option("test", None, "a file (or split) scored once at the end with the best model (default: none)"),
    Option("out", "runs/finetune", "run directory; when not given and it holds a run, the next free one "
                                   "(runs/finetune-2, ...)"),
    Option("max_seq_length", None, "tokens per sequence (default: the task's; docs/finetuning.md lists them)",
           POSITIVE),
    Option("epochs", 3, "passes over the training examples", POSITIVE),
    Option("features", FINE_TUNE, "fine-tune: train the whole model; any other: the feature-based approach, the "
                                  "encoder frozen and a head trained on the embeddings' output, the second-to-last or "
                                  "last hidden state, a learned weighted sum (ELMo) or concatenation of the last "
                                  "four, or a weighted sum of all hidden states (docs/finetuning.md, "
                                  "\"Feature-based\")", choices=tuple(CHOICES)),
    *optimizer_options(learning_rate=1e-4),
    Option("warmup_proportion", 0.1, "share of the steps over which the learning rate rises from 0", PROBABILITY),
    # default: the checkpoint's (HF's and the presets': 0.1; npbert pretrain saves 0, see docs/finetuning.md)
    *dropout_options(None, " (default: the checkpoint's)"),
    Option("max_train_examples", None, "use only the first N training examples (default: all)", POSITIVE),
    Option("max_eval_examples", None, "evaluate only the first N dev examples (default: all)", POSITIVE),
    Option("eval_batch_size", 64, "sequences per evaluation batch", POSITIVE),
    *QA_OPTIONS,
    *run_options(log_every=20, save_every_help="save a resumable checkpoint every N steps, and at each epoch's end "
                                               "(0: epoch ends only)"),
)


def qa(self) -> QAOptions:
    """The QA options of a run, as the QA format takes them."""
    return QAOptions(**{o.name: getattr(self, o.name) for o in QA_OPTIONS})


FinetuneOptions = options_record("FinetuneOptions", FINETUNE_OPTIONS, __name__, methods={"qa": qa})
