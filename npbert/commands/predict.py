"""`npbert predict CHECKPOINT --task TASK`: labels, tags, answer spans or choices for texts from a
file or stdin, one per line (tab-separated fields for pairs, QA and choices), or a task file: one
prediction per input line, "(empty)" for a blank one."""
import sys

from npbert.commands import add_backend_argument, check_checkpoint_task
from npbert.commands.arg_types import positive_int


def register(sub):
    from npbert.commands.predict_lines import LINES
    from npbert.tasks.registry import TASKS
    p = sub.add_parser("predict", help="predict with a fine-tuned checkpoint on texts (one per line, or stdin)",
                       description="Predict with a fine-tuned checkpoint: one output line per input line (a label, "
                                   "a score, tags, an answer span or a choice; \"(empty)\" for a blank line), from "
                                   "--input or stdin, or from a task file with --task-file.")
    p.add_argument("checkpoint", help="a fine-tuned checkpoint directory (e.g. runs/finetune/best)")
    p.add_argument("--task", required=True, choices=list(TASKS), metavar="TASK",
                   help="the task the checkpoint was fine-tuned for (it fixes the input format)")
    p.add_argument("--input", default="-", help="text file, one example per line: "
                   + " | ".join(dict.fromkeys(lines.line_fields for lines in LINES.values())) + " (default: stdin)")
    p.add_argument("--task-file", action="store_true", help="--input is in the task's own format (TSV, JSON, ...)")
    p.add_argument("--output", default="-", help="where to write one prediction per line (default: stdout); a "
                   "file that is there must be one npbert predict wrote")
    p.add_argument("--max-seq-length", type=positive_int, default=None, help="tokens per sequence (default: the task's)")
    p.add_argument("--batch-size", type=positive_int, default=64, help="sequences per batch")
    add_backend_argument(p)
    p.set_defaults(func=run)


def run(args):
    from npbert.atomic import atomic_write
    from npbert.commands.predict_lines import EMPTY, LINES, examples_from_lines
    from npbert.errors import DataError
    from npbert.finetuning.evaluation import check_max_length, load_finetuned, run_model
    from npbert.outputs import check_outputs
    from npbert.reading import read_stream
    from npbert.tasks.files import decode_lines, read_lines
    from npbert.tasks.registry import get_task, read_examples
    task = get_task(args.task)
    format, task_lines = task.format, LINES[task.format]
    output = None if args.output == "-" else args.output
    check_outputs([predictions_output(output)], inputs=[args.checkpoint, args.input if args.input != "-" else None])
    check_checkpoint_task(args.checkpoint, task)
    config, params, tokenizer, labels = load_finetuned(args.checkpoint, task)
    if args.task_file:
        lines = read_examples(task, args.input)
    elif args.input == "-":
        if sys.stdin.isatty():                          # someone typing: say what to type, and how to finish
            print(f"npbert predict: type one example per line ({task_lines.line_fields}), then Ctrl-D to end",
                  file=sys.stderr, flush=True)
        stdin = decode_lines(read_stream(sys.stdin.buffer, "<stdin>", "input"), "<stdin>")
        lines = examples_from_lines(task_lines, stdin)
    else:
        lines = examples_from_lines(task_lines, read_lines(args.input, "input file"), args.input)
    examples = [ex for ex in lines if ex is not None]   # a blank line: no example, EMPTY in its place
    max_len = args.max_seq_length or task.max_seq_length
    check_max_length(config, max_len)
    encoded = format.encode(examples, tokenizer, max_len, labels)
    outputs, _ = run_model(params, config, task.head, encoded.features, args.batch_size, tokenizer.pad_token_id)
    predictions = iter(zip(examples, outputs, format.decode(examples, encoded, outputs, labels)))
    text = "".join((EMPTY if ex is None else task_lines.to_line(*next(predictions))) + "\n" for ex in lines)
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            atomic_write(output, lambda f: f.write(text.encode("utf-8")))
        except OSError as e:
            raise DataError(f"cannot write --output {args.output}: {e.strerror}") from None
    return 0


def predictions_output(path):
    """--output as outputs.py's rule sees it: npbert predict's, when every line is a prediction line of
    some task's format, or EMPTY (a re-run with another --task still replaces its own file)."""
    import re

    from npbert.commands.predict_lines import EMPTY, LINES
    from npbert.outputs import text_output
    printed = [f"(?:{lines.line_printed})" for lines in LINES.values()]
    return text_output("--output", path, "|".join([re.escape(EMPTY)] + printed))
