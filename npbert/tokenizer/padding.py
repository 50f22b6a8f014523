"""Padding rows of an encoding to one width, as Hugging Face pads them: [PAD] ids, token type 0,
attention 0, special-token mask 1, offsets (0, 0), no word and no sequence, on the right or (for
padding_side="left") on the left, to the longest row or to max_length, rounded up to a multiple of
pad_to_multiple_of."""
from __future__ import annotations

from npbert.errors import InputError

# key -> what a padded position holds (input_ids: the tokenizer's pad id; _tokens: its string)
FILL = {"token_type_ids": 0, "attention_mask": 0, "special_tokens_mask": 1, "offset_mapping": (0, 0),
        "word_ids": -1}
SIDES = ("right", "left")


def target_width(lengths, padding, max_length, pad_to_multiple_of) -> int | None:
    """The width rows are padded to (None: no padding): the longest row, or max_length, rounded up
    to a multiple of pad_to_multiple_of."""
    if padding is None:
        return None
    width = max(lengths, default=0) if padding == "longest" else max_length
    if pad_to_multiple_of and width % pad_to_multiple_of:
        width += pad_to_multiple_of - width % pad_to_multiple_of
    return width


def pad_row(row: dict, width: int, side: str, pad_id: int) -> dict:
    """A row (key -> list, input_ids among them) padded to width; a longer row stays as it is."""
    n = width - len(row["input_ids"])
    if n <= 0:
        return row
    fill = {**FILL, "input_ids": pad_id}
    if side == "left":
        return {k: [fill[k]] * n + v if k in fill else v for k, v in row.items()}
    return {k: v + [fill[k]] * n if k in fill else v for k, v in row.items()}


def check_padding_options(padding_side, pad_to_multiple_of) -> None:
    if padding_side not in SIDES:
        raise InputError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    if pad_to_multiple_of is not None and (not isinstance(pad_to_multiple_of, int) or isinstance(pad_to_multiple_of, bool)
                                           or pad_to_multiple_of < 1):
        raise InputError(f"pad_to_multiple_of must be a positive integer or None, got {pad_to_multiple_of!r}")
