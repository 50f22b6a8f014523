"""Examples -> model inputs with BertTokenizer, and features -> padded batches.

A feature is a dict of Python lists (one encoded example): "input_ids", "token_type_ids",
and its target, "labels" (an int, a float for regression, or one int per token), or QA's
"start_positions" / "end_positions" (qa.py). Multiple choice holds one list per choice.
make_batch pads a batch to its own longest sequence (not to max_seq_length): short
sentences cost short sequences.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from npbert.errors import DataError
from npbert.ops import IGNORE_INDEX

TARGETS = ("labels", "start_positions", "end_positions")


@dataclass
class Encoded:
    features: list                                 # one dict of lists per model input
    contexts: list = field(default_factory=list)   # QA: each example's context token offsets


def label_ids(example, index, regression):
    """The example's label as the model takes it: a class id, a float, or None (no label)."""
    label = example.get("label")
    if label is None:
        return None
    if regression:
        try:
            value = float(label)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):   # "nan" and "inf" parse, and would make the loss NaN
            raise DataError(f"{example['where']}: label {label!r} is not a finite number (a regression task)")
        return value
    if str(label) not in index:
        raise DataError(f"{example['where']}: label {label!r} is not one of the task's labels "
                        f"({', '.join(index)})")
    return index[str(label)]


def check_room_for_a_word(max_seq_length, special: int, about: str) -> None:
    """DataError for a max_seq_length that holds the `special` tokens and no piece of text."""
    if max_seq_length <= special:
        raise DataError(f"max_seq_length {max_seq_length} leaves no room for a word between [CLS] and [SEP]: "
                        f"{about} needs {special + 1} at least")


def encode_sequences(examples, tokenizer, max_seq_length, label_names=None, regression=False) -> list:
    """Single sentences or pairs: [CLS] a [SEP] (b [SEP]), the longer side truncated first. A length
    with no room for a word is refused: every example would be the same [CLS] [SEP], its features
    alike, a score of nothing."""
    pairs = any(ex.get("text_pair") is not None for ex in examples)
    check_room_for_a_word(max_seq_length, 3 if pairs else 2, "a sentence pair" if pairs else "sequence classification")
    index = {str(n): i for i, n in enumerate(label_names or ())}
    features = []
    for ex in examples:
        enc = tokenizer(ex["text"], ex.get("text_pair"), max_length=max_seq_length, truncation=True)
        features.append(dict(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"],
                             labels=label_ids(ex, index, regression)))
    return features


def encode_tags(examples, tokenizer, max_seq_length, tag_names) -> list:
    """Words -> WordPieces as Hugging Face's token classification does it: the words go in pre-split
    (is_split_into_words), truncated to max_seq_length, and word_ids() says which word each piece
    is from; a word's tag goes on its first piece, IGNORE_INDEX on the others (and on [CLS],
    [SEP]). A word without a piece in the sequence (cut off, or nothing but control characters)
    gets word_starts -1 and is predicted "O". A window with no room for a word is refused: every
    word would be "O" and the loss 0 over no labels, a score of nothing."""
    check_room_for_a_word(max_seq_length, 2, "token classification")
    index = {n: i for i, n in enumerate(tag_names)}
    features = []
    for ex in examples:
        tags = ex.get("tags")
        tag_ids = [tag_id(ex, tag, index) for tag in tags] if tags else None
        enc = tokenizer(ex["words"], is_split_into_words=True, truncation=True, max_length=max_seq_length)
        first = {}                                       # word -> the position of its first piece
        for position, word in enumerate(enc.word_ids()):
            if word is not None:
                first.setdefault(word, position)
        word_starts = [first.get(w, -1) for w in range(len(ex["words"]))]
        labels = [IGNORE_INDEX] * len(enc["input_ids"])
        for word, position in first.items():
            labels[position] = tag_ids[word] if tags else IGNORE_INDEX
        features.append(dict(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"],
                             labels=labels if tags else None, word_starts=word_starts))
    return features


def tag_id(example, tag, index):
    if tag not in index:
        raise DataError(f"{example['where']}: tag {tag!r} is not one of the task's tags ({', '.join(index)})")
    return index[tag]


def encode_choices(examples, tokenizer, max_seq_length) -> list:
    """Each example -> one (context, ending) pair per choice."""
    features = []
    for ex in examples:
        enc = tokenizer([ex["context"]] * len(ex["endings"]), ex["endings"], max_length=max_seq_length, truncation=True)
        if features and len(ex["endings"]) != len(features[0]["input_ids"]):
            raise DataError(f"{ex['where']}: {len(ex['endings'])} endings, the first example has "
                            f"{len(features[0]['input_ids'])}")
        features.append(dict(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"], labels=ex.get("label")))
    return features


def make_batch(features, pad_id) -> dict:
    """Features -> {input_ids, token_type_ids, attention_mask: (B, T) or (B, C, T), targets},
    padded to the longest sequence in the batch; targets only if every feature has one."""
    nested = isinstance(features[0]["input_ids"][0], list)             # multiple choice
    shape = (len(features), len(features[0]["input_ids"])) if nested else (len(features),)
    rows = {k: [s for f in features for s in (f[k] if nested else [f[k]])] for k in ("input_ids", "token_type_ids")}
    T = max(len(r) for r in rows["input_ids"])
    batch = {k: pad(rows[k], T, pad_id if k == "input_ids" else 0).reshape(*shape, T) for k in rows}
    batch["attention_mask"] = pad([[1] * len(r) for r in rows["input_ids"]], T, 0).reshape(*shape, T)
    for k in TARGETS:
        values = [f.get(k) for f in features]
        if values[0] is None or any(v is None for v in values):
            continue
        batch[k] = pad(values, T, IGNORE_INDEX) if isinstance(values[0], list) else np.array(values)
    return batch


def pad(rows, width, fill) -> np.ndarray:
    out = np.full((len(rows), width), fill, dtype=np.int64)           # (N, T)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def train_batches(n, batch_size, seed, epoch, start=0):
    """Row indices of each batch of an epoch: a permutation fixed by (seed, epoch); start skips
    the batches already done (resume)."""
    order = np.random.default_rng([seed, epoch]).permutation(n)
    for i in range(start * batch_size, n, batch_size):
        yield order[i:i + batch_size]


def eval_batches(features, batch_size):
    """Row indices in batches of similar length (less padding); predictions go back by index."""
    order = np.argsort([len(f["input_ids"][0] if isinstance(f["input_ids"][0], list) else f["input_ids"])
                        for f in features], kind="stable")
    for i in range(0, len(order), batch_size):
        yield order[i:i + batch_size]
