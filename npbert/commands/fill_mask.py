"""`npbert fill-mask CHECKPOINT "text with [MASK]"`: what the model predicts for each mask."""
from npbert.commands.arg_types import positive_int


def register(sub):
    p = sub.add_parser("fill-mask", help="show a checkpoint's top-k predictions for each [MASK] in a text",
                       description="Run a checkpoint's masked-LM head on each text and print the text with every "
                                   "[MASK] filled by the model's first guess, then each mask's --top-k guesses with "
                                   "their probabilities. The checkpoint needs an MLM head (npbert pretrain's has one; "
                                   "a plain BertModel, e.g. MiniLM, does not and is refused).")
    p.add_argument("checkpoint", help="a checkpoint directory (npbert or Hugging Face BERT with an MLM head)")
    p.add_argument("text", nargs="+", help='texts with [MASK], e.g. "the man went to the [MASK] ."')
    p.add_argument("--top-k", type=positive_int, default=5, help="predictions shown for each [MASK]")
    p.set_defaults(func=run)


def run(args):
    from npbert.checkpoint import load_pretrained
    from npbert.errors import CheckpointError
    from npbert.fill_mask import fill_mask, unknown_words
    loaded = load_pretrained(args.checkpoint, strict=False)   # a task head's tensors: said below
    if loaded.tokenizer is None:
        raise CheckpointError(f"{args.checkpoint} has no vocab.txt, so texts cannot be tokenized")
    for text in args.text:
        predictions = fill_mask(loaded.params, loaded.config, loaded.tokenizer, text, args.top_k)
        filled = text
        for options in predictions:
            filled = filled.replace("[MASK]", f"[{options[0][0]}]", 1)
        print(filled)
        for i, options in enumerate(predictions, 1):
            print(f"  [MASK] {i}: " + "  ".join(f"{tok} {p:.3f}" for tok, p in options))
        unknown = unknown_words(loaded.tokenizer, text)
        if unknown:
            print("  read as [UNK] (not in the model's vocabulary): " + ", ".join(unknown))
    return 0
