"""`npbert prepare`: a corpus -> pretraining shards (see npbert/data/prepare.py, docs/data.md)."""
from __future__ import annotations

import dataclasses

from npbert.commands.option_arguments import add_options
from npbert.data.prepare import prepare
from npbert.data.prepare_options import PrepareOptions
from npbert.errors import NpbertError


def register(subparsers):
    p = subparsers.add_parser("prepare", help="make masked-LM + NSP pretraining shards from a corpus",
                              description="Turn a corpus into pretraining instances (google-research/bert's "
                                          "algorithm), written as shards + manifest.json + vocab.txt.")
    add_options(p, PrepareOptions)
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
