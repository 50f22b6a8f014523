"""BertForTokenClassification: a tag per word, e.g. PER/LOC/ORG (docs/layers/token_classification.md).

    logits = classifier(dropout(h))                h: (B, T, F) every token -> logits: (B, T, K)
    loss   = CE over the tokens, IGNORE_INDEX (-100) where nothing is scored

A word's tag goes on its first WordPiece; [CLS], [SEP], padding and a word's later pieces are
not scored (the TAGS format's encoding, npbert/tasks/formats.py).
"""
from __future__ import annotations

from typing import NamedTuple

from npbert import backend
from npbert.heads.head import TOKENS, Head, classifier_dropout, int_labels, label_fields
from npbert.layers.classifier import W, ClassifierCache, classifier_backward, classifier_forward
from npbert.ops import CrossEntropyCache


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


HEAD = Head(
    name="token_classification", architecture="BertForTokenClassification", weight=W, reads=TOKENS,
    choices=False, targets=("labels",), num_outputs=lambda num_labels: num_labels,
    forward=token_head_forward, backward=token_head_backward, output_of=lambda out, b, T: out["logits"][b, :T],
    config_fields=label_fields)
