"""`npbert prepare`: a corpus -> pretraining shards (see npbert/data/prepare.py, docs/data.md)."""
from __future__ import annotations

import dataclasses

from npbert.commands.arg_types import finite_float, positive_int, seed
from npbert.commands.corpus_args import add_corpus_arguments
from npbert.data.prepare import PrepareOptions, prepare
from npbert.errors import NpbertError

DEFAULTS = PrepareOptions()


def register(subparsers):
    p = subparsers.add_parser("prepare", help="make masked-LM + NSP pretraining shards from a corpus",
                              description="Turn a corpus into pretraining instances (google-research/bert's "
                                          "algorithm), written as shards + manifest.json + vocab.txt.")
    add_corpus_arguments(p)
    p.add_argument("--format", dest="corpus_format", choices=("bert", "raw"), default=None,
                   help="text format: bert = one sentence per line, blank line between documents; raw = running "
                        "text, blank line between documents (default: detect per file)")
    p.add_argument("--out", default=DEFAULTS.out, help="output directory")
    p.add_argument("--max-predictions-per-seq", type=positive_int, default=DEFAULTS.max_predictions_per_seq,
                   help="most masked positions per instance")
    p.add_argument("--masked-lm-prob", type=finite_float(0, 1, low_open=True, high_open=True),   # 0, 1: no task
                   default=DEFAULTS.masked_lm_prob,
                   help="share of the tokens masked")
    p.add_argument("--short-seq-prob", type=finite_float(0, 1), default=DEFAULTS.short_seq_prob,
                   help="share of instances made shorter than --max-seq-length")
    p.add_argument("--whole-word-mask", action="store_true", help="mask whole words (a token and its ## pieces)")
    p.add_argument("--seed", type=seed, default=DEFAULTS.seed,
                   help="seed of the split, the masking and the NotNext segments")
    p.set_defaults(func=run)


def run(args) -> int:
    fields = {f.name for f in dataclasses.fields(PrepareOptions)}
    opts = PrepareOptions(**{k: v for k, v in vars(args).items() if k in fields})
    try:
        prepare(opts)
    except FileNotFoundError:
        raise
    except OSError as e:                                # a full or read-only disk: complete shards are kept
        raise NpbertError(f"could not write {e.filename or opts.out} ({e.strerror or e}); the shards written so "
                          "far are kept, and the same command finishes the rest") from None
    return 0
