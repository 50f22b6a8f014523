"""The statistics `npbert prepare` realises, counted from the shard arrays themselves, so a
shard written now and one found on disk from an interrupted run are counted the same way.

counts (summable over shards) -> summarize -> rates; format_report -> the printed text.
"""
from __future__ import annotations

import numpy as np

SPECIALS_PER_INSTANCE = 3  # [CLS], [SEP], [SEP]


def count_shard(arrays, mask_id) -> dict:
    """Raw counts of one shard; add them up with merge_counts."""
    lengths, num_masked = arrays["lengths"].astype(np.int64), arrays["num_masked"]
    n, P = len(lengths), arrays["masked_lm_positions"].shape[1]
    predicted = np.arange(P)[None, :] < num_masked[:, None]                              # (n, P)
    rows = np.broadcast_to(np.arange(n)[:, None], (n, P))[predicted]                     # (N,)
    shown = arrays["input_ids"][rows, arrays["masked_lm_positions"][predicted]]          # (N,) what the model sees
    labels = arrays["masked_lm_ids"][predicted]                                          # (N,)
    as_mask = int((shown == mask_id).sum())
    unchanged = int((shown == labels).sum())  # a random draw of the original id counts as unchanged
    return dict(instances=n, tokens=int(lengths.sum()),
                content_tokens=int(lengths.sum()) - SPECIALS_PER_INSTANCE * n,
                predicted=int(predicted.sum()), as_mask=as_mask, unchanged=unchanged,
                random=int(predicted.sum()) - as_mask - unchanged,
                is_next=int((arrays["next_sentence_labels"] == 0).sum()),
                length_counts=np.bincount(lengths, minlength=arrays["input_ids"].shape[1] + 1).tolist())


def merge_counts(counts_list, max_seq_length) -> dict:
    total = dict(instances=0, tokens=0, content_tokens=0, predicted=0, as_mask=0, unchanged=0, random=0,
                 is_next=0, length_counts=[0] * (max_seq_length + 1))
    for c in counts_list:
        for k, v in c.items():
            total[k] = [a + b for a, b in zip(total[k], v)] if k == "length_counts" else total[k] + v
    return total


def summarize(counts) -> dict:
    """Counts -> the rates that matter: mask rate over non-special tokens, the realised mask mix
    ([MASK] / unchanged / random), IsNext share."""
    def share(a, b):
        return a / b if b else 0.0
    return dict(mask_rate=share(counts["predicted"], counts["content_tokens"]),
                mask_share=share(counts["as_mask"], counts["predicted"]),
                random_share=share(counts["random"], counts["predicted"]),
                unchanged_share=share(counts["unchanged"], counts["predicted"]),
                is_next_share=share(counts["is_next"], counts["instances"]),
                mean_length=share(counts["tokens"], counts["instances"]))


def length_histogram(length_counts, bins=8, width=40) -> list:
    """Text bars: one line per range of sequence lengths."""
    counts = np.asarray(length_counts)
    edges = np.linspace(0, len(counts) - 1, bins + 1).round().astype(int)
    per_bin = [int(counts[lo + 1:hi + 1].sum()) for lo, hi in zip(edges[:-1], edges[1:])]
    top = max(per_bin) or 1
    return [f"  {lo + 1:4d}-{hi:<4d} {'#' * round(width * c / top):<{width}} {c:,}"
            for lo, hi, c in zip(edges[:-1], edges[1:], per_bin)]


def next_sentence_line(manifest, s) -> str:
    if manifest["options"].get("instances", "pairs") == "sentences":
        return "  next sentence: none (single sentences: masked LM only)"
    return f"  next sentence: IsNext {100 * s['is_next_share']:.1f}%, NotNext {100 - 100 * s['is_next_share']:.1f}%"


def format_report(manifest) -> str:
    """The statistics block `npbert prepare` prints, from a finished manifest."""
    lines = []
    for name, split in manifest["splits"].items():
        c, s = split["counts"], split["summary"]
        lines += [
            f"{name}: {split['documents']:,} documents -> {c['instances']:,} instances in {len(split['shards'])} "
            f"shard(s), {c['tokens']:,} tokens (mean length {s['mean_length']:.1f})",
            f"  masked LM: {c['predicted']:,} predicted = {100 * s['mask_rate']:.2f}% of non-special tokens; "
            f"[MASK] {100 * s['mask_share']:.1f}% / same {100 * s['unchanged_share']:.1f}% / "
            f"random {100 * s['random_share']:.1f}% (mask mix {manifest['options']['mask_mix']})",
            next_sentence_line(manifest, s),
        ]
        if name == "train":
            lines += ["  sequence lengths:"] + length_histogram(c["length_counts"])
    return "\n".join(lines)
