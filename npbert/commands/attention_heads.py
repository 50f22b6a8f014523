"""`npbert attention-heads CHECKPOINT`: what every attention head looks at on average (to [CLS], to
[SEP], to punctuation, to itself, to the previous or next token, and how spread out it is), over
held-out text of the model's own pretraining data, with the heads that do something recognisable
named and the near-uniform ones listed as no clear pattern (Clark et al. 2019)."""
from npbert.commands import add_backend_argument, training_backend
from npbert.commands.arg_types import positive_int

RECORD_FIELDS = ("statistics", "means", "queries", "named", "broad")   # --json's, in order
RECOGNISED_BY = RECORD_FIELDS[:4]        # what npbert/outputs.py looks for: a file written before "broad" is ours too


def register(sub):
    p = sub.add_parser("attention-heads", help="average attention of every head to [CLS], [SEP], punctuation, "
                       "itself, its neighbours, and its entropy",
                       description="Average attention of every layer's every head over held-out text "
                       "(Clark et al. 2019, 'What Does BERT Look At?'); docs/linguistics.md says more.")
    p.add_argument("checkpoint", help="a checkpoint directory (npbert or Hugging Face BERT)")
    p.add_argument("--data", default=None,
                   help="prepared pretraining data whose held-out IsNext pairs are read, masks put back "
                   "(default: the checkpoint's own, from its training state or a data/ beside it)")
    p.add_argument("--sequences", type=positive_int, default=500, help="held-out sequences to average over")
    p.add_argument("--batch-size", type=positive_int, default=32, help="sequences per forward pass")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="draw the layers x heads grid of every statistic (needs npbert[plot]) (default: none)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the averages and the named heads as JSON (default: none)")
    add_backend_argument(p, help="hot-op backend (default: numba, or NPBERT_BACKEND)", default=training_backend())
    p.set_defaults(func=run)


def run(args):
    import json

    from npbert.atomic import atomic_write
    from npbert.checkpoint import load_pretrained
    from npbert.commands.minimal_pairs import require_tokenizer
    from npbert.errors import DataError
    from npbert.linguistics.attention_heads import STATISTICS, broad_heads, head_statistics, named_heads
    from npbert.linguistics.seen_corpus import heldout_batches, pretraining_data_of
    from npbert.outputs import check_outputs, json_output
    from npbert.plotting import png_output
    check_outputs([json_output("--json", args.json, RECOGNISED_BY), png_output("--plot", args.plot)],
                  inputs=[args.checkpoint, args.data])
    loaded = load_pretrained(args.checkpoint, strict=False)
    tokenizer = require_tokenizer(loaded, args.checkpoint)
    data = args.data or pretraining_data_of(args.checkpoint)
    if data is None:
        raise DataError(f"no pretraining data found for {args.checkpoint}: give --data DIR (a directory `npbert "
                        "prepare` made, with a held-out split)")
    batches = heldout_batches(data, tokenizer.ids_to_tokens, args.sequences, args.batch_size)
    stats = head_statistics(loaded.params, loaded.config, batches, tokenizer)
    means = stats.mean()                                                          # (L, A, 8)
    print(f"{int(stats.counts[0]):,} query tokens of {data}'s held-out IsNext pairs, masks put back")
    print("\n".join(format_heads(means)))
    named, broad = named_heads(means), broad_heads(means)
    print_heads(named, broad)
    if args.json:
        record = dict(zip(RECORD_FIELDS, (list(STATISTICS) + ["uniform_entropy"], means.tolist(), int(stats.counts[0]),
                                          [list(n) for n in named], [list(b) for b in broad])))
        atomic_write(args.json, lambda f: f.write((json.dumps(record) + "\n").encode()))
    if args.plot:
        draw(means, STATISTICS, args.plot, args.checkpoint)
    return 0


def print_heads(named, broad) -> None:
    """The verdict: the heads one target describes, then the near-uniform ones, which are not a
    pattern (their attention is spread over every key)."""
    print("heads that do something recognisable:" if named else "no head puts half its attention on one target")
    for layer, head, what in named:
        print(f"  layer {layer} head {head}: {what}")
    if broad:
        print("heads with no clear pattern (near-uniform: attention spread over every key):")
    for layer, head, what in broad:
        print(f"  layer {layer} head {head}: {what}")


def format_heads(means) -> list:
    from npbert.linguistics.attention_heads import TARGETS
    lines = ["layer head " + " ".join(f"{t:>11}" for t in TARGETS) + "  entropy (uniform)"]
    for i in range(means.shape[0]):
        for a in range(means.shape[1]):
            lines.append(f"{i:>5} {a:>4} " + " ".join(f"{means[i, a, k]:11.3f}" for k in range(len(TARGETS)))
                         + f"  {means[i, a, -2]:.2f} ({means[i, a, -1]:.2f})")
    return lines


def draw(means, names, path, title) -> None:
    from npbert.plotting import MISSING_NOTE, head_statistics, load_pyplot, save_png
    plt = load_pyplot()
    if plt is None:
        print(MISSING_NOTE)
        return
    save_png(plt, head_statistics(plt, means[:, :, :len(names)], list(names), title=f"average attention: {title}"),
             path)
    print(f"wrote {path}")
