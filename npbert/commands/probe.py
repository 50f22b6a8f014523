"""`npbert probe CHECKPOINT --task TASK`: a linear probe on every layer's frozen features (a sentence
task: mean-pooled pieces; a token task: each word's first piece), accuracy per layer, beside the
same probe on a random-initialised encoder of the same size (the control)."""
from npbert.commands import add_backend_argument, training_backend
from npbert.commands.arg_types import positive_int, seed

RECORD_FIELDS = ("task", "majority", "layers")                   # --json's, in order (npbert/outputs.py reads them)


def register(sub):
    p = sub.add_parser("probe", help="linear probes on every layer's frozen features, beside a random-init control",
                       description="Train a logistic-regression probe on each layer's frozen features of a "
                       "sentence or token task (l2 chosen on dev), and the same on a random-initialised encoder of "
                       "the same size; docs/linguistics.md says more.")
    p.add_argument("checkpoint", help="a checkpoint directory (npbert or Hugging Face BERT)")
    p.add_argument("--task", default="rt-polarity",
                   help="a sentence or token classification task with train/dev/test splits: rt-polarity, "
                   "builtin-sentence, builtin-tagging, ...")
    p.add_argument("--max-train-examples", type=positive_int, default=None, metavar="N",
                   help="probe on the first N training examples only (default: all)")
    p.add_argument("--max-seq-length", type=positive_int, default=None, help="tokens per sequence (default: the task's)")
    p.add_argument("--no-control", action="store_true", help="skip the random-initialised control")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random-initialised control")
    p.add_argument("--json", default=None, metavar="FILE", help="write the accuracies per layer as JSON (default: none)")
    add_backend_argument(p, help="hot-op backend (default: numba, or NPBERT_BACKEND)", default=training_backend())
    p.set_defaults(func=run)


def run(args):
    import json

    from npbert.atomic import atomic_write
    from npbert.checkpoint import load_pretrained
    from npbert.commands.minimal_pairs import require_tokenizer
    from npbert.linguistics.minimal_pairs import random_like
    from npbert.linguistics.probes import probe_layers
    from npbert.outputs import check_outputs, json_output
    from npbert.tasks.formats import TAGS
    check_outputs([json_output("--json", args.json, RECORD_FIELDS)], inputs=[args.checkpoint])
    task, splits, names = probe_task(args)
    loaded = load_pretrained(args.checkpoint, strict=False)
    tokenizer = require_tokenizer(loaded, args.checkpoint)
    models = {"pretrained": loaded.params} if args.no_control else \
        {"pretrained": loaded.params, "random-init": random_like(loaded, args.seed)}
    results = {}
    for name, params in models.items():
        features = [features_of(task, params, loaded.config, tokenizer, split, names, args) for split in splits]
        results[name] = probe_layers(*features, num_classes=len(names))
    majority = majority_share(features)
    print(f"probing {task.name}: {len(features[0].labels):,} train / {len(features[1].labels):,} dev / "
          f"{len(features[2].labels):,} test {'words' if task.format is TAGS else 'sentences'}; "
          f"majority class: dev {majority[1]:.3f}, test {majority[2]:.3f}")
    print("\n".join(format_results(results)))
    if args.json:
        layers = {m: [vars(r) for r in rs] for m, rs in results.items()}
        record = dict(zip(RECORD_FIELDS, (task.name, majority, layers)))
        atomic_write(args.json, lambda f: f.write((json.dumps(record) + "\n").encode()))
    return 0


def probe_task(args):
    """The task, its train / dev / test examples and its label names (a DataError for a task a
    probe cannot read)."""
    from npbert.errors import DataError
    from npbert.tasks.formats import SENTENCES, TAGS
    from npbert.tasks.registry import get_task, read_examples
    task = get_task(args.task)
    if task.format not in (SENTENCES, TAGS):
        raise DataError(f"a probe classifies sentences or tokens; {task.name} is a {task.format.about} task")
    if not task.generated and task.name != "rt-polarity":
        raise DataError(f"{task.name} reads files; a probe needs a task with train/dev/test splits built in "
                        "(rt-polarity, builtin-*)")
    splits = [read_examples(task, s) for s in ("train", "dev", "test")]
    splits[0] = splits[0][:args.max_train_examples]
    names = list(task.labels) if task.labels else sorted({str(ex["label"]) for ex in splits[0]})
    return task, splits, names


def features_of(task, params, config, tokenizer, examples, names, args):
    from npbert.linguistics.probes import sentence_features, token_features
    from npbert.tasks.formats import TAGS
    length = args.max_seq_length or task.max_seq_length
    make = token_features if task.format is TAGS else sentence_features
    return make(params, config, tokenizer, examples, names, length)


def majority_share(features) -> list:
    """The share of the training set's most frequent label in each split."""
    import numpy as np
    top = np.bincount(features[0].labels).argmax()
    return [float(np.mean(f.labels == top)) for f in features]


def format_results(results) -> list:
    names = list(results)
    lines = ["layer  " + "  ".join(f"{n + ' dev':>16} {n + ' test':>16}" for n in names)]
    for i in range(len(results[names[0]])):
        lines.append(f"{i:>5}  " + "  ".join(f"{results[n][i].dev_accuracy:16.3f} {results[n][i].test_accuracy:16.3f}"
                                             for n in names))
    return lines
