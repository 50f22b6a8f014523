"""`npbert evaluate CHECKPOINT --task TASK --data FILE`: a fine-tuned checkpoint's metrics on a task file."""
import json

from npbert.commands import add_backend_argument, check_checkpoint_task
from npbert.commands.arg_types import positive_int


def register(sub):
    from npbert.tasks.registry import TASKS
    p = sub.add_parser("evaluate", help="score a fine-tuned checkpoint on a task file (accuracy, F1, EM, ...)",
                       description="Score a fine-tuned checkpoint on a labelled task file (or a generated task's "
                                   "split) and print the task's metrics on one line (--json: one JSON object).")
    p.add_argument("checkpoint", help="a fine-tuned checkpoint directory (e.g. runs/finetune/best)")
    p.add_argument("--task", required=True, choices=list(TASKS), metavar="TASK",
                   help="the task the checkpoint was fine-tuned for (`npbert finetune --help` lists them)")
    p.add_argument("--data", default=None,
                   help="labelled task file; a split name for generated tasks (default: dev for those)")
    p.add_argument("--max-seq-length", type=positive_int, default=None, help="tokens per sequence (default: the task's)")
    p.add_argument("--batch-size", type=positive_int, default=64, help="sequences per batch")
    p.add_argument("--max-examples", type=positive_int, default=None, help="score only the first N examples (default: all)")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    add_backend_argument(p)
    p.set_defaults(func=run)


def run(args):
    from npbert.errors import DataError
    from npbert.finetuning.evaluation import evaluate_checkpoint, format_scores
    from npbert.tasks.registry import get_task
    task = get_task(args.task)
    check_checkpoint_task(args.checkpoint, task)
    source = args.data or ("dev" if task.generated else None)
    if source is None:
        raise DataError(f"task {task.name} reads files: pass --data FILE")
    scores, examples, _ = evaluate_checkpoint(args.checkpoint, task.name, source, args.batch_size,
                                              args.max_seq_length, max_examples=args.max_examples)
    if not scores:
        raise DataError(f"{source} has no labels to score against (use `npbert predict` for unlabelled text)")
    print(json.dumps(scores) if args.json else f"{task.name} on {source} ({len(examples):,} examples): "
          + format_scores(scores))
    return 0
