"""`npbert predict CHECKPOINT --task TASK`: labels, tags, answer spans or choices for texts from a
file or stdin, one per line (tab-separated fields for pairs, QA and choices), or a task file."""
import sys

import numpy as np

from npbert.commands import add_backend_argument, check_checkpoint_task
from npbert.commands.arg_types import positive_int


def register(sub):
    from npbert.tasks.registry import TASKS
    p = sub.add_parser("predict", help="predict with a fine-tuned checkpoint on texts (one per line, or stdin)")
    p.add_argument("checkpoint", help="a fine-tuned checkpoint directory (e.g. runs/finetune/best)")
    p.add_argument("--task", required=True, choices=list(TASKS), metavar="TASK",
                   help="the task the checkpoint was fine-tuned for (it fixes the input format)")
    p.add_argument("--input", default="-", help="text file, one example per line: text[<TAB>pair] | words | "
                                                 "question<TAB>context | context<TAB>ending<TAB>... (default: stdin)")
    p.add_argument("--task-file", action="store_true", help="--input is in the task's own format (TSV, JSON, ...)")
    p.add_argument("--output", default="-", help="where to write one prediction per line (default: stdout)")
    p.add_argument("--max-seq-length", type=positive_int, default=None, help="tokens per sequence (default: the task's)")
    p.add_argument("--batch-size", type=positive_int, default=64, help="sequences per batch")
    add_backend_argument(p)
    p.set_defaults(func=run)


def run(args):
    from npbert.errors import DataError
    from npbert.finetune import check_max_length, load_finetuned, run_model
    from npbert.ops import softmax_forward
    from npbert.tasks.files import decode_lines, read_lines
    from npbert.tasks.lines import FIELDS, examples_from_lines
    from npbert.tasks.pipeline import decode, encode
    from npbert.tasks.registry import get_task, read_examples
    task = get_task(args.task)
    check_checkpoint_task(args.checkpoint, task)
    config, params, tokenizer, labels = load_finetuned(args.checkpoint, task)
    if args.task_file:
        examples = read_examples(task, args.input)
    elif args.input == "-":
        if sys.stdin.isatty():                          # someone typing: say what to type, and how to finish
            print(f"npbert predict: type one example per line ({FIELDS[task.kind]}), then Ctrl-D to end",
                  file=sys.stderr, flush=True)
        examples = examples_from_lines(task.kind, decode_lines(sys.stdin.buffer.read(), "<stdin>"))
    else:
        examples = examples_from_lines(task.kind, read_lines(args.input, "input file"), args.input)
    max_len = args.max_seq_length or task.max_seq_length
    check_max_length(config, max_len)
    encoded = encode(task, examples, tokenizer, max_len, labels)
    outputs, _ = run_model(params, config, task.kind, encoded.features, args.batch_size, tokenizer.pad_token_id)
    predictions = decode(task, examples, encoded, outputs, labels)
    lines = []
    for ex, out, pred in zip(examples, outputs, predictions):
        if task.kind == "token_classification":
            lines.append(" ".join(f"{w}/{t}" for w, t in zip(ex["words"], pred)))
        elif task.kind == "question_answering":
            lines.append(f"{pred['text']}\t{pred['probability']:.3f}")
        elif task.regression:
            lines.append(f"{pred:.4f}")
        else:
            p = float(softmax_forward(np.asarray(out, np.float64))[0].max())
            lines.append(f"{pred}\t{p:.3f}" if task.kind == "sequence_classification" else
                         f"{pred}\t{p:.3f}\t{ex['endings'][pred]}")
    text = "".join(line + "\n" for line in lines)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise DataError(f"cannot write --output {args.output}: {e.strerror}") from None
    return 0
