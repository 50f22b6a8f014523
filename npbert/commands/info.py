"""`npbert info PRESET_OR_CHECKPOINT_DIR`: the configuration and the parameter counts; for a
checkpoint also whether its weights fit its config.json (from the safetensors header alone:
no tensor is read) and which heads it has."""
import math
import os


def register(sub):
    p = sub.add_parser("info", help="print a preset's or checkpoint's configuration and parameter counts",
                       description="Print a preset's or a checkpoint's configuration and parameter counts. For a "
                                   "checkpoint, check that its weights' shapes fit its config.json (exit 2 if "
                                   "not) and list its heads.")
    p.add_argument("model", help="a preset (tiny, mini, small, medium, base, large) or a checkpoint directory")
    p.set_defaults(func=run)


def run(args):
    from npbert.checkpoint import check_checkpoint
    from npbert.config import PRESETS, BertConfig
    from npbert.model_params import count_params
    shapes = None
    if args.model in PRESETS and not os.path.exists(args.model):
        config = BertConfig.from_preset(args.model)
    elif os.path.exists(args.model):                  # a file is named as one by check_checkpoint
        config, shapes = check_checkpoint(args.model)
    else:
        raise FileNotFoundError(f"{args.model!r} is neither a preset ({', '.join(PRESETS)}) nor a directory")
    print(config.to_json_string(), end="")
    print(f"parameters, BertModel (embeddings, encoder, pooler):  {count_params(config):>13,}")
    task_head = {n: s for n, s in (shapes or {}).items() if not n.startswith(("bert.", "cls."))}
    if task_head:                   # a fine-tuned checkpoint: its own class, with its head's tensors
        names = ", ".join(sorted({n.rsplit(".", 1)[0] for n in task_head}))
        what = f"{'/'.join(config.extra.get('architectures') or ['with a task head'])} (+ {names}):"
        print(f"parameters, {what:<42} {count_params(config) + sum(math.prod(s) for s in task_head.values()):>13,}")
    elif shapes is None or any(n.startswith("cls.") for n in shapes):
        print(f"parameters, BertForPreTraining (+ MLM and NSP heads): {count_params(config, heads=True):>13,}"
              "  (decoder tied to the word embeddings)")
    if shapes is not None:
        print(f"weights: {len(shapes)} tensors, shapes as config.json says; heads: {heads(config, shapes)}")
    return 0


def heads(config, shapes) -> str:
    """The heads a checkpoint's tensors hold, by name, with a task head's class and labels."""
    from npbert.heads.feature_based import FIELD
    from npbert.heads.params import label_names_of
    found = [what for prefix, what in (("cls.predictions.", "masked LM"), ("cls.seq_relationship.", "next sentence"))
             if any(n.startswith(prefix) for n in shapes)]
    task = sorted({n.rsplit(".", 1)[0] for n in shapes if not n.startswith(("bert.", "cls."))})
    if task:
        labels = label_names_of(config)
        features = config.extra.get(FIELD)
        found.append(f"{'/'.join(config.extra.get('architectures') or ['a task head'])} ({', '.join(task)}"
                     + (f"; {len(labels)} labels: {', '.join(labels)})" if labels else ")")
                     + (f" on the frozen encoder's features ({features})" if features else ""))
    return ", ".join(found) or "none (encoder and pooler: a BertModel)"
