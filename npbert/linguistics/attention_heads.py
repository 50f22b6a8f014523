"""What each attention head looks at, on average (Clark et al. 2019, "What Does BERT Look At?"):
for every layer and head, over every real query token of N sequences,

    [CLS]        attention to position 0                      sum_k p[q, k], k = 0
    [SEP]        attention to the [SEP] tokens                 sum over k holding [SEP]
    punctuation  attention to punctuation pieces (. , ! ? ...) sum over k holding one
    self         attention to itself                           p[q, q]
    previous     attention to the token before it              p[q, q - 1], queries with one
    next         attention to the token after it               p[q, q + 1], queries with one
    entropy      of its attention distribution, in nats        -sum_k p[q, k] log p[q, k]

p are the softmax probabilities the trace records as
`bert.encoder.layer.{i}.attention.self.probs` (no dropout). A head is named when one average
says what it does: at least NAMED_AT of its attention on one target ("previous-token head").
One with an entropy at least BROAD_AT of the uniform distribution's over the same keys is
"broad": near-uniform, no clear pattern.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npbert.model import bert_forward
from npbert.trace import Trace
from npbert.tokenizer.normalize import is_punctuation

TARGETS = ("[CLS]", "[SEP]", "punctuation", "self", "previous", "next")
STATISTICS = TARGETS + ("entropy",)
NAMED_AT = 0.5
BROAD_AT = 0.9
PROBS = "bert.encoder.layer.{}.attention.self.probs"


@dataclass
class HeadStatistics:
    """Sums over the query tokens seen so far; mean() divides by how many had each statistic."""
    sums: np.ndarray            # (L, A, 8): the 7 STATISTICS, then the uniform entropy log(n keys)
    counts: np.ndarray          # (8,) queries counted for each (previous / next: those that have one)

    @classmethod
    def empty(cls, layers: int, heads: int) -> "HeadStatistics":
        return cls(np.zeros((layers, heads, len(STATISTICS) + 1)), np.zeros(len(STATISTICS) + 1))

    def mean(self) -> np.ndarray:
        """(L, A, 8) the averages: STATISTICS in order, then the uniform entropy."""
        return self.sums / np.maximum(self.counts, 1)

    def add(self, layer: int, probs, input_ids, attention_mask, cls_id, sep_id, punctuation) -> None:
        """probs: (B, A, T, T) one layer's attention; input_ids, attention_mask: (B, T), right-padded;
        punctuation: (V,) bool. Adds every real query's statistics to the sums of `layer`."""
        real = attention_mask.astype(bool)                                        # (B, T)
        p = probs.astype(np.float64)                                              # (B, A, T, T)
        per_query = [p[..., 0],                                                   # (B, A, T) each
                     (p * (input_ids == sep_id)[:, None, None, :]).sum(-1),
                     (p * punctuation[input_ids][:, None, None, :]).sum(-1),
                     np.diagonal(p, axis1=2, axis2=3)]
        logs = np.log(np.where(p > 0, p, 1.0))                                    # log p, 0 where p = 0
        entropy = -(p * logs).sum(-1)                                             # (B, A, T)
        keys = real.sum(1, keepdims=True)                                         # (B, 1) real keys
        uniform = np.broadcast_to(np.log(keys), real.shape)                        # (B, T)
        previous = np.diagonal(p, offset=-1, axis1=2, axis2=3)                    # (B, A, T - 1): q = 1 .. T-1
        following = np.diagonal(p, offset=1, axis1=2, axis2=3)                    # (B, A, T - 1): q = 0 .. T-2
        neighbours = real[:, 1:]              # (B, T - 1): query t has t - 1 / query t - 1 has t, right-padded
        weights = [real] * 4 + [neighbours, neighbours, real, real]
        values = per_query + [previous, following, entropy, uniform[:, None, :]]
        for k, (value, weight) in enumerate(zip(values, weights)):
            self.sums[layer, :, k] += (value * weight[:, None, :]).sum(axis=(0, 2))

    def count_queries(self, attention_mask) -> None:
        """Once a batch: the queries each statistic averages over (previous / next: those with one)."""
        real = attention_mask.astype(bool)                                        # (B, T)
        n, neighbours = real.sum(), real[:, 1:].sum()
        self.counts += [n, n, n, n, neighbours, neighbours, n, n]


def punctuation_ids(tokenizer) -> np.ndarray:
    """(V,) bool: the pieces made only of punctuation characters (specials and ## pieces excluded)."""
    return np.array([bool(t) and not t.startswith("[") and all(is_punctuation(c) for c in t)
                     for t in tokenizer.ids_to_tokens])


def head_statistics(params, config, batches, tokenizer) -> HeadStatistics:
    """batches: dicts with input_ids and attention_mask (B, T), right-padded -> the averages over
    every real query token of every layer's every head."""
    stats = HeadStatistics.empty(config.num_hidden_layers, config.num_attention_heads)
    punctuation = punctuation_ids(tokenizer)
    for batch in batches:
        trace = Trace()
        bert_forward(params, config, batch["input_ids"], batch.get("token_type_ids"), batch["attention_mask"],
                     trace=trace)
        for i in range(config.num_hidden_layers):
            stats.add(i, trace[PROBS.format(i)], batch["input_ids"], batch["attention_mask"],
                      tokenizer.cls_token_id, tokenizer.sep_token_id, punctuation)
        stats.count_queries(batch["attention_mask"])
    return stats


def named_heads(means) -> list:
    """(layer, head, what it does) for the heads one target average describes (NAMED_AT)."""
    named = []
    L, A, _ = means.shape
    for i in range(L):
        for a in range(A):
            what = [f"{t} ({means[i, a, k]:.2f})" for k, t in enumerate(TARGETS) if means[i, a, k] >= NAMED_AT]
            if what:
                named.append((i, a, ", ".join(what)))
    return named


def broad_heads(means) -> list:
    """(layer, head, its entropy) for the heads near the uniform distribution (BROAD_AT) that no
    target names: spread over every key is no pattern a reader can use."""
    named = {(i, a) for i, a, _ in named_heads(means)}
    entropy, uniform = means[:, :, len(TARGETS)], means[:, :, len(TARGETS) + 1]     # (L, A)
    return [(i, a, f"entropy {entropy[i, a]:.2f} of {uniform[i, a]:.2f} nats")
            for i in range(means.shape[0]) for a in range(means.shape[1])
            if uniform[i, a] > 0 and entropy[i, a] >= BROAD_AT * uniform[i, a] and (i, a) not in named]
