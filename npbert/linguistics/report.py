"""What `npbert minimal-pairs` prints and writes: the accuracy table (every scorer side by side,
the first one with its 95% interval), one sentence on whether it beats the others, a JSON
summary, and one JSON line of scores per pair."""
from __future__ import annotations

import json

# the fields of the two outputs, in the order written: npbert recognises its own by them (npbert/outputs.py)
SUMMARY_FIELDS = ("pairs", "pairs_with_unk", "unk_pairs_left_out", "scorers", "groups", "costs")
SCORE_FIELDS = ("pairID", "UID", "pll_good", "pll_bad", "tokens_good", "tokens_bad", "correct", "has_unk")
LEVEL_TITLES = {"overall": "", "field": "field ", "phenomenon": "phenomenon ", "paradigm": "paradigm "}


def format_table(rows, scorers) -> list:
    """rows: GroupAccuracy (accuracy.py) -> lines: group, pairs, the first scorer's accuracy in %
    with its interval, then every other scorer's accuracy in %."""
    first, others = scorers[0], scorers[1:]
    names = [f"{LEVEL_TITLES[r.level]}{r.name}" for r in rows]
    width = max(len(n) for n in names + ["group"])
    head = f"{'group':<{width}}  {'pairs':>7}  {first + ' [95% interval]':<24}" + "".join(f"  {s:>9}" for s in others)
    lines = [head]
    for name, r in zip(names, rows):
        low, high = r.interval(first)
        cell = f"{100 * r.accuracy(first):5.1f} [{100 * low:4.1f}, {100 * high:5.1f}]"
        lines.append(f"{name:<{width}}  {r.pairs:>7,}  {cell:<24}"
                     + "".join(f"  {100 * r.accuracy(s):9.1f}" for s in others))
    return lines


def verdict(overall, scorers) -> str | None:
    """One sentence on whether the first scorer beats the others overall (None when it is alone):
    ahead of a baseline whose accuracy lies below its 95% interval, behind one above it, and
    not distinguishable by these pairs from one inside it."""
    first, others = scorers[0], scorers[1:]
    if not others:
        return None
    low, high = overall.interval(first)
    within = f"within its 95% interval [{100 * low:.1f}, {100 * high:.1f}] of"
    relations = {"ahead of": [], "behind": [], within: []}
    for s in others:
        accuracy = overall.accuracy(s)
        relation = "ahead of" if accuracy < low else "behind" if accuracy > high else within
        relations[relation].append(f"{s} ({100 * accuracy:.1f} %)")
    parts = [f"{relation} {' and '.join(names)}" for relation, names in relations.items() if names]
    return f"overall, {first} ({100 * overall.accuracy(first):.1f} %) is " + ", ".join(parts)


def summary(rows, scored, unk_pairs: int, unk_left_out: bool) -> dict:
    """The JSON summary: the pairs scored, how many held [UNK] (and whether they were left out),
    per scorer and group the accuracy and its interval, the costs."""
    return dict(zip(SUMMARY_FIELDS, (
        len(scored.tokenized.pairs), unk_pairs, unk_left_out, list(scored.scores),
        [{"level": r.level, "name": r.name, "pairs": r.pairs, "accuracy": {s: r.accuracy(s) for s in r.right},
          "interval": {s: list(r.interval(s)) for s in r.right}} for r in rows],
        {name: vars(cost) for name, cost in scored.costs.items()})))


def score_lines(scored, scorer: str):
    """One JSON object per pair: pairID, UID, pll_good, pll_bad (the scorer's log-probabilities),
    tokens_good, tokens_bad (the pieces scored), correct, has_unk."""
    t = scored.tokenized
    good, bad = scored.scores[scorer]
    for k, p in enumerate(t.pairs):
        yield json.dumps(dict(zip(SCORE_FIELDS, (p.pair_id, p.paradigm, float(good[k]), float(bad[k]),
                                                 t.good_pieces[k], t.bad_pieces[k], bool(good[k] > bad[k]),
                                                 bool(t.has_unk[k])))), ensure_ascii=False)
