"""The metrics of the BERT paper's fine-tuning tasks, in NumPy (docs/finetuning.md#metrics).

    accuracy, f1 (binary, for a positive class), macro_f1     classification (GLUE, SST-2, MNLI ...)
    matthews_corrcoef                                          CoLA
    pearson, spearman (ties get their average rank)            STS-B
    entity_scores: precision, recall, F1 over exact spans      CoNLL-2003 NER (conlleval's rules)
    squad_scores: exact match and token F1, best over the      SQuAD v1.1 (the official evaluate-v1.1.py)
                  gold answers, after normalize_answer

Every score is a fraction in [0, 1] (the SQuAD script and conlleval print 100x these).
Degenerate cases follow scikit-learn: a ratio with a zero denominator is 0.
"""
from __future__ import annotations

import collections
import re
import string

import numpy as np


def _ratio(num, den) -> float:
    return float(num) / float(den) if den else 0.0


# --- classification ---------------------------------------------------------------------------------

def accuracy(y_true, y_pred) -> float:
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    return _ratio((y_true == y_pred).sum(), len(y_true))


def f1(y_true, y_pred, positive=1) -> float:
    """F1 of one class (binary F1: the positive class, as GLUE scores MRPC and QQP)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    tp = int(((y_pred == positive) & (y_true == positive)).sum())
    fp = int(((y_pred == positive) & (y_true != positive)).sum())
    fn = int(((y_pred != positive) & (y_true == positive)).sum())
    return _ratio(2 * tp, 2 * tp + fp + fn)


def macro_f1(y_true, y_pred) -> float:
    """Unweighted mean of the F1 of every class seen in y_true or y_pred."""
    classes = np.union1d(np.asarray(y_true), np.asarray(y_pred))
    return float(np.mean([f1(y_true, y_pred, c) for c in classes])) if len(classes) else 0.0


def matthews_corrcoef(y_true, y_pred) -> float:
    """MCC, multi-class form (Gorodkin 2004; scikit-learn's): for two classes it is
    (tp tn - fp fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn))."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    classes, idx = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
    n, k = len(y_true), len(classes)
    confusion = np.zeros((k, k))
    np.add.at(confusion, (idx[:n], idx[n:]), 1)                        # (true, predicted)
    t, p, correct = confusion.sum(1), confusion.sum(0), np.trace(confusion)
    cov_tp = correct * n - t @ p
    den = np.sqrt((n * n - p @ p) * (n * n - t @ t))
    return _ratio(cov_tp, den)


# --- regression ---------------------------------------------------------------------------------------

def pearson(x, y) -> float:
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    x, y = x - x.mean(), y - y.mean()
    return _ratio((x * y).sum(), np.sqrt((x * x).sum() * (y * y).sum()))


def average_ranks(x) -> np.ndarray:
    """Ranks 1..n; tied values all get the mean of the ranks they span (scipy's rankdata).
    A NaN has no rank: any NaN makes every rank NaN (rankdata's nan_policy="propagate"), so
    spearman is NaN as pearson is, not a ranking with the NaN sorted last."""
    x = np.asarray(x, np.float64)
    if np.isnan(x).any():
        return np.full(x.shape, np.nan)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])   # first index of each tie group
    ends = np.r_[starts[1:], len(x)]
    group_rank = (starts + 1 + ends) / 2.0                                 # mean of ranks starts+1 .. ends
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(group_rank, ends - starts)
    return ranks


def spearman(x, y) -> float:
    return pearson(average_ranks(x), average_ranks(y))


# --- tagging: entity-level F1 with conlleval's chunk rules ----------------------------------------------

def _split_tag(tag):
    """(prefix, type) as conlleval splits a tag (/^([^-]*)-(.*)$/): at the first hyphen; a tag
    without one is all prefix with the empty type, so bare B and I tags make chunks too."""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


def entities(tags) -> set:
    """{(type, start, end)} of the chunks in a BIO (IOB1 or IOB2) tag sequence, end exclusive.
    As conlleval: a chunk starts at B-X, or at I-X after O or after a tag of another type."""
    found, start, kind = set(), None, ""
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, t = _split_tag(tag)
        if start is not None and (prefix in ("B", "O") or t != kind):
            found.add((kind, start, i))
            start = None
        if prefix in ("B", "I") and start is None:
            start, kind = i, t
    return found


def entity_scores(gold_sequences, pred_sequences) -> dict:
    """Micro precision, recall and F1 over exact (type, span) matches, plus token accuracy."""
    tp = n_gold = n_pred = correct_tokens = n_tokens = 0
    for gold, pred in zip(gold_sequences, pred_sequences, strict=True):
        g, p = entities(gold), entities(pred)
        tp, n_gold, n_pred = tp + len(g & p), n_gold + len(g), n_pred + len(p)
        correct_tokens += sum(a == b for a, b in zip(gold, pred, strict=True))
        n_tokens += len(gold)
    precision, recall = _ratio(tp, n_pred), _ratio(tp, n_gold)
    return dict(precision=precision, recall=recall, f1=_ratio(2 * precision * recall, precision + recall),
                token_accuracy=_ratio(correct_tokens, n_tokens))


# --- SQuAD v1.1 ----------------------------------------------------------------------------------------

_PUNCTUATION = set(string.punctuation)


def normalize_answer(s: str) -> str:
    """The official SQuAD normalisation: lower-case, drop punctuation, drop the articles
    a/an/the, collapse whitespace."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def squad_exact(prediction: str, truth: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(truth))


def squad_f1(prediction: str, truth: str) -> float:
    pred, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    common = collections.Counter(pred) & collections.Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions, gold_answers) -> dict:
    """predictions: one string per question; gold_answers: a list of acceptable strings per
    question. Each question scores its best over the gold answers; the scores are averaged."""
    em = [max(squad_exact(p, g) for g in golds) for p, golds in zip(predictions, gold_answers, strict=True)]
    f = [max(squad_f1(p, g) for g in golds) for p, golds in zip(predictions, gold_answers, strict=True)]
    return dict(exact_match=float(np.mean(em)) if em else 0.0, f1=float(np.mean(f)) if f else 0.0)
