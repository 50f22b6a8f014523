"""BertForTokenClassification: a tag per word, e.g. PER/LOC/ORG (docs/layers/token_classification.md).

    logits = classifier(dropout(h))                h: (B, T, F) every token -> logits: (B, T, K)
    loss   = CE over the tokens, IGNORE_INDEX (-100) where nothing is scored

A word's tag goes on its first WordPiece; [CLS], [SEP], padding and a word's later pieces are
not scored. Examples: {"words", "tags"}; entity F1 (CoNLL's, exact spans) and token accuracy.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert import metrics as m
from npbert.heads.head import (TOKENS, Encoded, Head, classifier_dropout, int_labels, label_fields,
                               most_common)
from npbert.layers.classifier import W, ClassifierCache, classifier_backward, classifier_forward
from npbert.ops import CrossEntropyCache
from npbert.tasks.encoding import encode_tags


class TokenHeadCache(NamedTuple):
    classifier: ClassifierCache
    loss: CrossEntropyCache | None
    logits_shape: tuple          # (B, T, K)


def token_head_forward(x, params, config, targets, rng, trace):
    """x: (B, T, F) -> ({"logits": (B, T, K), "loss", "labels"}, cache); labels (B, T),
    IGNORE_INDEX where not scored (padding, special tokens, every WordPiece of a word but the first)."""
    logits, head_cache = classifier_forward(x, params, classifier_dropout(config), rng, trace)  # (B, T, K)
    B, T, K = logits.shape
    labels, loss, loss_cache = targets.get("labels"), None, None
    if labels is not None:
        labels = int_labels("labels", labels, (B, T), K, "num_labels")
        loss, loss_cache = backend.cross_entropy_forward(logits.reshape(B * T, K), labels.reshape(-1))
        trace.record("loss", loss)
    return dict(logits=logits, loss=loss, labels=labels), TokenHeadCache(head_cache, loss_cache, logits.shape)


def token_head_backward(dloss, cache: TokenHeadCache, trace):
    # -> dx: (B, T, F), the classifier's grads
    dlogits = backend.cross_entropy_backward(dloss, cache.loss).reshape(cache.logits_shape)   # (B, T, K)
    return classifier_backward(dlogits, cache.classifier, trace)                              # (B, T, F)


# --- around the model --------------------------------------------------------------------------------

def encode(task, examples, tokenizer, max_seq_length, labels, options=None) -> Encoded:
    return Encoded(encode_tags(examples, tokenizer, max_seq_length, labels))


def decode(task, examples, encoded, outputs, labels, options=None) -> list:
    """logits (T, K) per example -> a tag per word, read at its first piece ("O" past the window)."""
    return [[labels[int(np.argmax(o[s]))] if s >= 0 else "O" for s in f["word_starts"]]
            for f, o in zip(encoded.features, outputs)]


def gold(task, examples) -> list:
    return [ex["tags"] for ex in examples]


def score(task, examples, predictions, labels=None) -> dict:
    s = m.entity_scores(gold(task, examples), predictions)
    return dict(entity_f1=s["f1"], precision=s["precision"], recall=s["recall"], token_accuracy=s["token_accuracy"])


def baseline(task, train_examples, dev_examples) -> list:
    """The most frequent training tag, for every word."""
    guess = most_common(tag for tags in gold(task, train_examples) for tag in tags)
    return [[guess] * len(ex["tags"]) for ex in dev_examples]


def label_names(task, train_examples) -> list:
    """The training examples' tags, "O" first."""
    seen = {t for ex in train_examples for t in (ex["tags"] or [])}
    return (["O"] if "O" in seen else []) + sorted(seen - {"O"})


def from_line(fields, line, n, where):
    return dict(words=line.split(), tags=None, where=where)


def format_prediction(task, example, output, prediction) -> str:
    return " ".join(f"{w}/{t}" for w, t in zip(example["words"], prediction))


HEAD = Head(
    kind="token_classification", architecture="BertForTokenClassification", weight=W, reads=TOKENS,
    choices=False, targets=("labels",), num_outputs=lambda num_labels: num_labels,
    forward=token_head_forward, backward=token_head_backward, output_of=lambda out, b, T: out["logits"][b, :T],
    encode=encode, decode=decode, gold_key="tags", gold=gold, score=score, baseline=baseline,
    label_names=label_names, line_fields="words separated by spaces", from_line=from_line,
    format=format_prediction, labelled=True, config_fields=label_fields)
