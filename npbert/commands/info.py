"""`npbert info PRESET_OR_CHECKPOINT_DIR`: the configuration and the parameter counts."""
import os


def register(sub):
    p = sub.add_parser("info", help="print a preset's or checkpoint's configuration and parameter counts")
    p.add_argument("model", help="a preset (tiny, mini, small, medium, base, large) or a checkpoint directory")
    p.set_defaults(func=run)


def run(args):
    from npbert.config import PRESETS, BertConfig
    from npbert.model import count_params
    if os.path.isdir(args.model):
        config = BertConfig.load(args.model)
    elif args.model in PRESETS:
        config = BertConfig.from_preset(args.model)
    else:
        raise FileNotFoundError(f"{args.model!r} is neither a preset ({', '.join(PRESETS)}) nor a directory")
    print(config.to_json_string(), end="")
    print(f"parameters, BertModel (embeddings, encoder, pooler):  {count_params(config):>13,}")
    print(f"parameters, BertForPreTraining (+ MLM and NSP heads): {count_params(config, heads=True):>13,}"
          "  (decoder tied to the word embeddings)")
    return 0
