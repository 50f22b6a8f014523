"""The bag-of-words baseline: L2-regularised logistic regression (softmax over the labels) on
tf-idf weighted unigram + bigram counts, in NumPy, trained full-batch with Adam.

    features  x = tfidf(text): lower-cased words and punctuation marks (regex \\w+ | [^\\w\\s]),
              their unigrams and bigrams; tf = 1 + log(count), idf = log((1 + N) / (1 + df)) + 1,
              each row scaled to unit length (scikit-learn's TfidfVectorizer(sublinear_tf=True))
    model     p(y | x) = softmax(x W + b)               W: (features, labels), b: (labels,)
    loss      mean cross-entropy + (l2 / 2) ||W||^2     l2 chosen on the dev set from L2_GRID

The texts of a pair task are featurised separately and their features kept apart ("b:" prefix).
Documents are sparse: a matrix is three arrays (row, column, value) of its non-zeros, and
products are bincounts over them, so 100k features cost nothing.

    python -m npbert.finetuning.bow_baseline --task rt-polarity
"""
from __future__ import annotations

import argparse
import collections
import sys
from dataclasses import dataclass

import numpy as np
import regex

from npbert.logreg import train_logreg

TOKEN = regex.compile(r"\w+|[^\w\s]")
L2_GRID = (1e-6, 1e-5, 1e-4, 1e-3)


def ngrams(text: str, prefix="") -> list:
    words = TOKEN.findall(text.lower())
    return [prefix + w for w in words] + [prefix + a + " " + b for a, b in zip(words, words[1:])]


def example_terms(ex) -> list:
    return ngrams(ex["text"]) + (ngrams(ex["text_pair"], "b:") if ex.get("text_pair") else [])


@dataclass
class Sparse:
    """A (rows, cols) matrix by its non-zeros: value[k] at (row[k], col[k])."""
    row: np.ndarray
    col: np.ndarray
    value: np.ndarray
    shape: tuple

    def matmul(self, w):                                   # (rows, F) @ (F, C) -> (rows, C)
        return np.stack([np.bincount(self.row, self.value * w[self.col, c], self.shape[0])
                         for c in range(w.shape[1])], axis=1)

    def rmatmul(self, g):                                  # (rows, F)^T @ (rows, C) -> (F, C)
        return np.stack([np.bincount(self.col, self.value * g[self.row, c], self.shape[1])
                         for c in range(g.shape[1])], axis=1)


class Tfidf:
    """Vocabulary and idf from the training texts; min_count drops rarer terms."""

    def __init__(self, term_lists, min_count=1):
        df = collections.Counter(t for terms in term_lists for t in set(terms))
        self.index = {t: i for i, t in enumerate(sorted(t for t, c in df.items() if c >= min_count))}
        n = len(term_lists)
        self.idf = np.array([np.log((1 + n) / (1 + df[t])) + 1 for t in self.index])   # (F,)

    def transform(self, term_lists) -> Sparse:
        rows, cols, vals = [], [], []
        for i, terms in enumerate(term_lists):
            counts = collections.Counter(self.index[t] for t in terms if t in self.index)
            j = np.fromiter(counts.keys(), np.int64, len(counts))
            v = (1 + np.log(np.fromiter(counts.values(), np.float64, len(counts)))) * self.idf[j]
            rows.append(np.full(len(j), i))
            cols.append(j)
            vals.append(v / max(np.linalg.norm(v), 1e-12))                          # unit-length row
        cat = (lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype))
        return Sparse(cat(rows, np.int64), cat(cols, np.int64), cat(vals, np.float64),
                      (len(term_lists), len(self.index)))


def bow_baseline(train, dev, test=None, labels=None, l2_grid=L2_GRID, log=print) -> dict:
    """Fit on train for each l2, keep the best on dev; accuracy on dev (and test)."""
    labels = labels or sorted({str(ex["label"]) for ex in train})
    index = {n: i for i, n in enumerate(labels)}
    y = {name: np.array([index[str(ex["label"])] for ex in split]) for name, split in
         (("train", train), ("dev", dev), ("test", test or []))}
    tfidf = Tfidf([example_terms(ex) for ex in train])
    X = {name: tfidf.transform([example_terms(ex) for ex in split]) for name, split in
         (("train", train), ("dev", dev), ("test", test or []))}
    best = None
    for l2 in l2_grid:
        W, b = train_logreg(X["train"], y["train"], len(labels), l2)
        acc = float(np.mean((X["dev"].matmul(W) + b).argmax(1) == y["dev"]))
        log(f"l2 {l2:g}: dev accuracy {acc:.4f}")
        if best is None or acc > best[0]:
            best = (acc, l2, W, b)
    acc, l2, W, b = best
    result = dict(dev_accuracy=acc, l2=l2, features=X["train"].shape[1])
    if test:
        result["test_accuracy"] = float(np.mean((X["test"].matmul(W) + b).argmax(1) == y["test"]))
    return result


def main(argv=None) -> int:
    from npbert.errors import NpbertError
    from npbert.tasks.formats import SENTENCES
    from npbert.tasks.registry import get_task, read_examples
    p = argparse.ArgumentParser(prog="python -m npbert.finetuning.bow_baseline", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="rt-polarity", help="a sequence classification task (default rt-polarity)")
    p.add_argument("--train", default="train")
    p.add_argument("--dev", default="dev")
    p.add_argument("--test", default="test")
    p.add_argument("--max-train-examples", type=int, default=None,
                   help="use only the first N training examples (as npbert finetune's option)")
    args = p.parse_args(argv)
    try:
        task = get_task(args.task)
        if task.format is not SENTENCES:
            raise NpbertError(f"the bag-of-words baseline classifies sentences or sentence pairs; {task.name} "
                              f"is a {task.format.about} task")
        train, dev, test = [read_examples(task, s) for s in (args.train, args.dev, args.test)]
    except NpbertError as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    train = train[:args.max_train_examples]
    print(f"{len(train):,} training examples")
    r = bow_baseline(train, dev, test, labels=list(task.labels) if task.labels else None)
    print(f"bag-of-words logistic regression on {task.name}: {r['features']:,} features, l2 {r['l2']:g}, "
          f"dev accuracy {r['dev_accuracy']:.4f}, test accuracy {r['test_accuracy']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
