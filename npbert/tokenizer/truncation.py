"""Truncation as Hugging Face's Rust tokenizer does it (tokenizers/src/utils/truncation.rs and
Encoding::truncate): how many tokens each side of a pair keeps, and the windows a long sequence is
cut into when the tokens that do not fit are returned too (`return_overflowing_tokens`, `stride`).

    budget    max_length minus the special tokens ([CLS] a [SEP] b [SEP]: 3)
    windows   of `max_len` tokens, each starting `max_len - stride` after the last (so consecutive
              windows share `stride` tokens), until one reaches the end; from the left side, the
              same from the end backwards. The first window is what truncation keeps.
    pairs     each side is windowed on its own; the rows are the first windows together, then, as
              Encoding::merge_with orders them, each later window of the first side with every
              window of the second, then the first window of the first side with each later one.
"""
from __future__ import annotations

from npbert.errors import InputError

STRATEGIES = ("longest_first", "only_first", "only_second")


def longest_first(len_a: int, len_b: int, budget: int) -> tuple[int, int]:
    """How many tokens of each sequence to keep, as HF's `longest_first` (Rust) truncation:
    the shorter keeps min(its length, budget // 2), the longer gets the rest."""
    if len_a + len_b <= budget:
        return len_a, len_b
    keep_short = min(len_a, len_b, budget // 2)
    return (keep_short, budget - keep_short) if len_a <= len_b else (budget - keep_short, keep_short)


def windows(length: int, max_len: int, stride: int = 0, side: str = "right") -> list[tuple[int, int]]:
    """[(start, stop)] of the windows a sequence of `length` tokens is cut into, kept one first
    (Encoding::truncate). A sequence that fits is one window; max_len 0 keeps nothing and returns
    the whole sequence as the one overflowing window, as the Rust code does."""
    if max_len >= length:
        return [(0, length)]
    if max_len == 0:
        return [(0, 0), (0, length)]
    if stride >= max_len:
        raise InputError(f"stride={stride} must be less than the {max_len} tokens a window of this sequence holds "
                         "(max_length minus the special tokens and the other side of a pair)")
    step, out = max_len - stride, []
    if side == "right":
        for start in range(0, length, step):
            out.append((start, min(start + max_len, length)))
            if out[-1][1] == length:
                break
    else:
        for stop in range(length, 0, -step):
            out.append((max(0, stop - max_len), stop))
            if out[-1][0] == 0:
                break
    return out


def truncation_windows(lengths: tuple, strategy: str, budget: int, stride: int = 0, side: str = "right") -> list:
    """The rows of a truncated text (lengths (n,)) or pair ((n_a, n_b)): [((start, stop), ...) per
    side], the row truncation keeps first, then the overflowing ones (truncate_encodings)."""
    if sum(lengths) <= budget:
        return [tuple((0, n) for n in lengths)]
    if budget == 0:
        per_side = [windows(n, 0, stride, side) for n in lengths]
    elif strategy == "longest_first":
        keep = (budget,) if len(lengths) == 1 else longest_first(*lengths, budget)
        per_side = [windows(n, k, stride, side) for n, k in zip(lengths, keep)]
    else:
        target = 0 if strategy == "only_first" else 1
        if target >= len(lengths):
            raise InputError("truncation='only_second' needs a pair (text, text_pair) to truncate")
        excess = sum(lengths) - budget
        if lengths[target] <= excess:
            raise InputError(f"truncation={strategy!r} cannot fit max_length: the {'first' if target == 0 else 'second'} "
                             f"text has {lengths[target]} tokens and {excess} must go; truncate 'longest_first'")
        per_side = [windows(n, n - excess, stride, side) if i == target else [(0, n)] for i, n in enumerate(lengths)]
    return merged_rows(per_side)


def merged_rows(per_side: list) -> list:
    """Rows of windows in the order Encoding::merge_with makes them: the first windows of every side,
    then each later window of the first side with every window of the second, then the first window
    of the first side with every later one of the second."""
    if len(per_side) == 1:
        return [(w,) for w in per_side[0]]
    first, second = per_side
    rows = [(first[0], second[0])]
    for a in first[1:]:
        rows += [(a, b) for b in second]
    rows += [(first[0], b) for b in second[1:]]
    return rows
