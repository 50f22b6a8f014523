"""Linear probes per layer (Tenney et al. 2019; Hewitt & Liang 2019 for the control): how much of
a task a linear classifier reads off one layer's frozen features, layer by layer, for the
pretrained encoder and for a random-initialised one of the same size (the control: what the
probe and the embeddings of a random model manage on their own).

    features of layer i  (i = 0: the embeddings' output, i = L: the last layer's)
        a sentence task  the mean of the layer's vectors over the sentence's pieces ([CLS], [SEP] left out)
        a token task     the layer's vector at each word's first piece
    probe                multinomial logistic regression (npbert/logreg.py) on features standardised
                         with the training set's mean and spread, l2 chosen on dev from L2_GRID

Every layer is read from one forward pass (bert_hidden_states, no dropout).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npbert.logreg import Dense, train_logreg
from npbert.model import bert_hidden_states
from npbert.ops import IGNORE_INDEX
from npbert.tasks.encoding import encode_sequences, encode_tags, eval_batches, make_batch

L2_GRID = (1e-4, 1e-3, 1e-2, 1e-1)
BATCH_SIZE = 64


@dataclass(frozen=True)
class LayerFeatures:
    layers: list                # L + 1 arrays (N, H) float64: one row per sentence, or per word
    labels: np.ndarray          # (N,) int


def sentence_features(params, config, tokenizer, examples, labels, max_seq_length) -> LayerFeatures:
    """Mean-pooled pieces of every layer for each example (text, label)."""
    features = encode_sequences(examples, tokenizer, max_seq_length, labels)
    rows = [[None] * len(features) for _ in range(config.num_hidden_layers + 1)]
    for order in eval_batches(features, BATCH_SIZE):
        batch = make_batch([features[k] for k in order], tokenizer.pad_token_id)
        mask = batch["attention_mask"].astype(np.float64)                           # (B, T)
        mask[:, 0] = 0                                                                # [CLS] out
        mask[np.arange(len(order)), batch["attention_mask"].sum(1) - 1] = 0           # [SEP] out
        weights = mask / np.maximum(mask.sum(1, keepdims=True), 1)                    # (B, T)
        for i, h in enumerate(hidden_states(params, config, batch)):                  # (B, T, H)
            pooled = np.einsum("bt,bth->bh", weights, h)                              # (B, H)
            for k, row in zip(order, pooled):
                rows[i][k] = row
    return LayerFeatures([np.stack(r) for r in rows], np.array([f["labels"] for f in features]))


def token_features(params, config, tokenizer, examples, tags, max_seq_length) -> LayerFeatures:
    """Every layer's vector at each word's first piece, with the word's tag (words cut off by
    max_seq_length are left out)."""
    features = encode_tags(examples, tokenizer, max_seq_length, tags)
    layers, labels = [[] for _ in range(config.num_hidden_layers + 1)], []
    for order in eval_batches(features, BATCH_SIZE):
        batch = make_batch([features[k] for k in order], tokenizer.pad_token_id)
        read = batch["labels"] != IGNORE_INDEX                                        # (B, T) first pieces
        labels.append(batch["labels"][read])
        for i, h in enumerate(hidden_states(params, config, batch)):
            layers[i].append(h[read].astype(np.float64))                              # (n, H)
    return LayerFeatures([np.concatenate(x) for x in layers], np.concatenate(labels))


def hidden_states(params, config, batch) -> list:
    return bert_hidden_states(params, config, batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])


@dataclass(frozen=True)
class ProbeResult:
    layer: int
    l2: float
    dev_accuracy: float
    test_accuracy: float | None


def probe_layers(train: LayerFeatures, dev: LayerFeatures, test: LayerFeatures | None, num_classes: int,
                 l2_grid=L2_GRID) -> list:
    """A probe per layer, its l2 chosen on dev -> ProbeResult per layer (test scored once, with it)."""
    results = []
    for i in range(len(train.layers)):
        mean, spread = train.layers[i].mean(0), train.layers[i].std(0) + 1e-6            # (H,) each
        standard = [None if s is None else Dense((s.layers[i] - mean) / spread) for s in (train, dev, test)]
        best = None
        for l2 in l2_grid:
            W, b = train_logreg(standard[0], train.labels, num_classes, l2)
            accuracy = float(np.mean((standard[1].matmul(W) + b).argmax(1) == dev.labels))
            if best is None or accuracy > best[0]:
                best = (accuracy, l2, W, b)
        accuracy, l2, W, b = best
        test_accuracy = None if test is None else float(np.mean((standard[2].matmul(W) + b).argmax(1) == test.labels))
        results.append(ProbeResult(i, l2, accuracy, test_accuracy))
    return results
