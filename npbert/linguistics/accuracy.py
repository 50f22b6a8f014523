"""Minimal-pair accuracy: a pair is right when the good sentence scores strictly higher than the
bad one. A tie is wrong: a scorer that gives both sentences the same number (a model that
ignores its input, a unigram model on two orderings of the same words) must not earn credit
for it (the BabyLM 2025 frequency-baseline artifact).

Accuracies are grouped as BLiMP reports them (overall, per field, per phenomenon, per
paradigm), each with its 95% Wilson score interval over the pairs of the group.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054          # the standard normal's 97.5% quantile
LEVELS = (("overall", None), ("field", "field"), ("phenomenon", "phenomenon"), ("paradigm", "paradigm"))


def correct(good_scores, bad_scores) -> np.ndarray:
    """(P,) bool: good > bad, a tie counting as wrong."""
    return np.asarray(good_scores) > np.asarray(bad_scores)


def wilson_interval(right: int, total: int, z: float = Z95) -> tuple:
    """The Wilson score interval of a binomial proportion (Wilson 1927): (low, high) in [0, 1]."""
    if total == 0:
        return (0.0, 1.0)
    p = right / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class GroupAccuracy:
    level: str          # overall, field, phenomenon, paradigm
    name: str           # the group's name ("overall" for the whole set)
    pairs: int
    right: dict         # {scorer name: pairs right}

    def accuracy(self, scorer) -> float:
        return self.right[scorer] / self.pairs

    def interval(self, scorer) -> tuple:
        return wilson_interval(self.right[scorer], self.pairs)


def group_accuracies(pairs, outcomes: dict) -> list:
    """pairs: MinimalPair records; outcomes: {scorer name: (P,) bool right} -> GroupAccuracy rows,
    overall first, then each field, phenomenon and paradigm in name order."""
    rows = []
    for level, attribute in LEVELS:
        keys = np.array(["overall" if attribute is None else getattr(p, attribute) for p in pairs])
        for name in sorted(set(keys)):
            members = keys == name
            rows.append(GroupAccuracy(level, str(name), int(members.sum()),
                                      {s: int(right[members].sum()) for s, right in outcomes.items()}))
    return rows
