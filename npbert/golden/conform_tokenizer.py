"""Where a port's tokenizer first leaves a tokenizer case: the tensor, the text (or pair) and the
position, what the golden has there and what the port has (an id with its vocabulary piece, a
token type, a mask bit, or a character span), and the original characters around it. The text is
the case's constants' `texts` (or `text_pairs`, a token of type 1 being from the pair's second
text), the pieces its `vocab_tokens` or `vocab_file` (the checkpoint's vocab.txt, in the golden
directory).
"""
from __future__ import annotations

import os

import numpy as np

from npbert.errors import DataError
from npbert.golden.schema import is_inside
from npbert.tokenizer.vocab import load_vocab

AROUND = 12                                             # characters shown either side of the token


def locate_token(golden_dir, entry: dict, golden: dict, results: dict):
    """(tensor name, "text R, position P", detail) of the first entry a port's tokenizer got wrong,
    in the case's tensor order and, in a tensor, row by row; None if no tensor can be compared (a
    missing, misshapen or mistyped tensor is a FAIL row of its own)."""
    vocab = case_vocab(golden_dir, entry.get("constants", {}))
    for t in entry["tensors"]:
        want, got = golden[t["name"]], results.get(t["name"])
        if t["role"] != "output" or got is None or not _comparable(np.asarray(got), want):
            continue
        got = np.asarray(got)
        width = min(got.shape[1], want.shape[1])         # a port that pads to another width: the common part
        unequal = got[:, :width] != want[:, :width]      # (B, T) or offsets' (B, T, 2)
        if unequal.ndim == 3:
            unequal = unequal.any(axis=2)
        wider = f"; the port's rows are {got.shape[1]} tokens wide, the golden's {want.shape[1]}" \
            if got.shape[1] != want.shape[1] else ""
        if not unequal.any():
            if not wider:
                continue
            return t["name"], f"position {width}", f"the rows agree up to position {width}{wider}"
        row, position = (int(i) for i in np.argwhere(unequal)[0])
        try:
            where, detail = _describe(entry, golden, t["name"], row, position, got, vocab)
        except (KeyError, IndexError, TypeError, ValueError):  # constants edited by hand: the bare place
            where, detail = f"row {row}, position {position}", "differs"
        count = int(unequal.sum())
        more = f"; {count} positions of `{t['name']}` differ" if count > 1 else ""
        return t["name"], where, detail + more + wider
    return None


def _comparable(got, want) -> bool:
    """The same dtype, rows and trailing axes (the width, axis 1, may differ: padding)."""
    return got.dtype == want.dtype and got.ndim == want.ndim >= 2 and got.shape[0] == want.shape[0] and \
        got.shape[2:] == want.shape[2:]


def case_vocab(golden_dir, constants: dict) -> list | None:
    """The case's vocabulary as a list of tokens (id = index), or None if the golden has none."""
    if isinstance(constants.get("vocab_tokens"), list):
        return constants["vocab_tokens"]
    name = constants.get("vocab_file")
    if not isinstance(name, str) or not is_inside(name):
        return None
    try:
        return load_vocab(os.path.join(golden_dir, name))
    except DataError:
        return None


def _describe(entry, golden, name, row, position, got, vocab) -> tuple:
    prefix = name[:name.index("/") + 1] if "/" in name else ""
    ids = golden[prefix + "input_ids"][row]
    text, label = _source_text(entry["constants"], golden, prefix, row, position)
    where = f"{label}, position {position}"
    token = _piece(int(ids[position]), vocab)
    want, have = golden[name][row, position], got[row, position]
    if name.endswith("input_ids"):
        what = f"expected {token}, got {_piece(int(have), vocab)}"
    elif name.endswith("offset_mapping"):
        what = f"expected characters {_span(text, want)}, got {_span(text, have)}, of the token {token}"
    else:
        what = f"expected {int(want)}, got {int(have)}, at the token {token}"
    start, end = _token_span(golden[prefix + "offset_mapping"][row], position)
    return where, f"{what}; the text there: {_around(text, start, end)}"


def _source_text(constants, golden, prefix, row, position) -> tuple:
    """(the original text a token is from, how the verdict names it): texts[row], or the side of
    text_pairs[row] its token type says (a special token or padding: the side it stands in)."""
    if not prefix:
        return constants["texts"][row], f"text {row}"
    side = int(golden[prefix + "token_type_ids"][row, position])
    return constants["text_pairs"][row][side], f"pair {row}, {'first' if side == 0 else 'second'} text"


def _token_span(offsets, position) -> tuple:
    """The token's (start, end) characters; for a special token or padding, (0, 0) in the golden,
    the point after the last token before it that has characters (where it stands in the text)."""
    start, end = (int(v) for v in offsets[position])
    if end > start:
        return start, end
    before = [int(e) for s, e in offsets[:position] if e > s]
    return (before[-1], before[-1]) if before else (0, 0)


def _piece(token_id: int, vocab) -> str:
    if vocab is None:
        return f"id {token_id}"
    if not 0 <= token_id < len(vocab):
        return f"id {token_id} (not in the vocabulary)"
    return f"`{vocab[token_id]}` ({token_id})"


def _span(text, span) -> str:
    start, end = (int(v) for v in span)
    return f"{start}-{end} ({text[start:end]!r})" if 0 <= start <= end <= len(text) else f"{start}-{end}"


def _around(text: str, start: int, end: int) -> str:
    """The characters around [start, end) of text, the span between « », one line (repr escapes)."""
    left, right = max(0, start - AROUND), min(len(text), end + AROUND)
    shown = text[left:start] + "«" + text[start:end] + "»" + text[end:right]
    return ("…" if left else "") + repr(shown) + ("…" if right < len(text) else "")
