"""`npbert finetune`: a checkpoint (or a random model) + a task head, trained on a labelled task."""
from npbert.commands.arg_types import positive_int, probability
from npbert.commands.training_args import add_optimizer_arguments, add_run_arguments, track_typed
from npbert.config import PRESETS
from npbert.heads.feature_based import CHOICES


def register(sub):
    from npbert.finetune import FinetuneOptions
    from npbert.tasks.registry import TASKS
    d = FinetuneOptions()
    p = sub.add_parser("finetune", help="fine-tune a checkpoint on a task (GLUE, CoNLL, SQuAD, SWAG, CSV, built-in)",
                       description="Fine-tune BERT on a labelled task, evaluating on the dev set after each epoch "
                                   "and keeping the best model in OUT/best. Tasks: " +
                                   "; ".join(f"{t.name}: {t.about}" for t in TASKS.values()))
    track_typed(p)
    p.add_argument("--task", default=d.task, choices=list(TASKS), metavar="TASK", help="the task (listed above)")
    p.add_argument("--model", default=None,
                   help="checkpoint directory to start from (npbert or Hugging Face); this or --from-scratch "
                        "(default: none)")
    p.add_argument("--from-scratch", default=None, choices=list(PRESETS),
                   help="start from random weights of this preset instead of --model (default: none)")
    p.add_argument("--vocab", default=None,
                   help="vocab.txt for --from-scratch (default: the built-in one for built-in tasks)")
    p.add_argument("--train", default=None,
                   help="training file; a split name for generated tasks (default: train for those)")
    p.add_argument("--dev", default=None,
                   help="dev file, evaluated each epoch; a split name for generated tasks (default: dev for those)")
    p.add_argument("--test", default=None,
                   help="a file (or split) scored once at the end with the best model (default: none)")
    p.add_argument("--out", default=d.out,
                   help="run directory; when not given and it holds a run, the next free one (runs/finetune-2, ...)")
    p.add_argument("--max-seq-length", type=positive_int, default=None,
                   help="tokens per sequence (default: the task's; docs/finetuning.md lists them)")
    p.add_argument("--epochs", type=positive_int, default=d.epochs, help="passes over the training examples")
    p.add_argument("--features", default=d.features, choices=CHOICES,
                   help="fine-tune: train the whole model; any other: the feature-based approach, the encoder "
                        "frozen and a head trained on the embeddings' output, the second-to-last or last hidden "
                        "state, a learned weighted sum (ELMo) or concatenation of the last four, or a weighted sum "
                        "of all hidden states (docs/finetuning.md, \"Feature-based\")")
    add_optimizer_arguments(p, d)
    p.add_argument("--warmup-proportion", type=probability, default=d.warmup_proportion,
                   help="share of the steps over which the learning rate rises from 0")
    p.add_argument("--hidden-dropout-prob", type=probability, default=None,
                   help="dropout on the embeddings' and every sublayer's output (default: the checkpoint's)")
    p.add_argument("--attention-probs-dropout-prob", type=probability, default=None,
                   help="dropout on the attention probabilities (default: the checkpoint's)")
    p.add_argument("--max-train-examples", type=positive_int, default=None,
                   help="use only the first N training examples (default: all)")
    p.add_argument("--max-eval-examples", type=positive_int, default=None,
                   help="evaluate only the first N dev examples (default: all)")
    p.add_argument("--eval-batch-size", type=positive_int, default=d.eval_batch_size, help="sequences per evaluation batch")
    p.add_argument("--doc-stride", type=positive_int, default=d.doc_stride, help="QA: tokens between window starts")
    p.add_argument("--max-query-length", type=positive_int, default=d.max_query_length, help="QA: question tokens kept")
    p.add_argument("--n-best-size", type=positive_int, default=d.n_best_size, help="QA: start/end candidates")
    p.add_argument("--max-answer-length", type=positive_int, default=d.max_answer_length, help="QA: longest answer in tokens")
    add_run_arguments(p, d, "save a resumable checkpoint every N steps, and at each epoch's end (0: epoch ends only)", "npbert.finetune:finetune")
