"""Counting baselines: what a model that only counts the pretraining corpus's pieces says of a
sentence. Both read the same pieces the BERT saw (the corpus's training sentences, tokenized
with its vocabulary) and give a log-probability per sentence, compared like the PLLs.

Unigram: log p(s) = sum_i log p(w_i), p(w) = (c(w) + 1) / (N + V) (add-one over the V pieces of
the vocabulary; N pieces counted). It knows which pieces are frequent, nothing of order, so its
sum is taken exactly rounded (math.fsum): two orders of the same pieces get the very same score,
a tie, where a sum in sentence order would break the tie by rounding.

N-gram: interpolated Kneser-Ney of order n over pieces (Chen & Goodman 1999; the counts KenLM
calls "adjusted", Heafield et al. 2013), one discount D for every order:

    a(g)       = c(g) for the n-grams and for those starting with <s>; for the other, shorter
                 grams the number of distinct pieces seen just before them: |{v : c(v g) > 0}|
    P_k(w | h) = max(a(h w) - D, 0) / A(h)  +  D * N(h) / A(h) * P_{k-1}(w | h without its first piece)
                 A(h) = sum_x a(h x), N(h) = |{x : a(h x) > 0}|; a context never seen (A(h) = 0)
                 passes straight to P_{k-1}
    P_0(w)     = 1 / (V + 1)        (every piece of the vocabulary and </s>)

Each sentence is scored as <s>^(n-1) w_1 .. w_m </s>, </s> included: log p(s) = sum over the
m + 1 predictions.
"""
from __future__ import annotations

import math

import numpy as np

DEFAULT_ORDER = 3
DISCOUNT = 0.75


class UnigramModel:
    def __init__(self, sentences, vocab_size: int):
        pieces = np.concatenate([np.asarray(s, dtype=np.int64) for s in sentences] or [np.zeros(0, np.int64)])
        counts = np.bincount(pieces, minlength=vocab_size)[:vocab_size]              # (V,)
        self.log_p = np.log((counts + 1.0) / (len(pieces) + vocab_size))             # (V,)
        self.name = "unigram"

    def sentence_log_prob(self, sentence) -> float:
        return math.fsum(self.log_p[np.asarray(sentence, dtype=np.int64)].tolist())   # order-independent


class KneserNeyModel:
    """Interpolated Kneser-Ney over the ids 0 .. vocab_size - 1, <s> = vocab_size, </s> = + 1."""

    def __init__(self, sentences, vocab_size: int, order: int = DEFAULT_ORDER, discount: float = DISCOUNT):
        if not 1 <= order <= max_order(vocab_size):
            raise ValueError(f"the n-gram order must be in 1..{max_order(vocab_size)} for {vocab_size:,} pieces, "
                             f"got {order}")
        self.order, self.discount, self.vocab_size = order, discount, vocab_size
        self.bos, self.eos, self.base = vocab_size, vocab_size + 1, vocab_size + 2
        self.name = f"{order}-gram"
        streams = [self.padded(s) for s in sentences]
        raw = [count_grams(streams, k, self.base) for k in range(1, order + 1)]   # [(keys, counts)] by order
        self.tables = [self.adjusted(raw, k) for k in range(1, order + 1)]          # (keys, a) per order k
        self.contexts = [context_sums(keys, a, self.base) for keys, a in self.tables]

    def padded(self, sentence) -> np.ndarray:
        return np.concatenate([np.full(self.order - 1, self.bos), np.asarray(sentence, dtype=np.int64), [self.eos]])

    def adjusted(self, raw, k):
        """(keys, a) of order k: raw counts at the top order, else left-continuation counts, except
        for grams starting with <s> (nothing precedes them): their raw counts."""
        keys, counts = raw[k - 1]
        if k == self.order:
            return keys, counts.astype(np.float64)
        longer, _ = raw[k]                                               # distinct (k+1)-grams
        suffix, continuations = np.unique(longer % self.base ** k, return_counts=True)
        a = np.zeros(len(keys))
        a[np.searchsorted(keys, suffix)] = continuations                 # every suffix is a k-gram seen
        starts_bos = keys // self.base ** (k - 1) == self.bos
        a[starts_bos] = counts[starts_bos]
        return keys, a

    def prob(self, gram) -> float:
        """P_k(w | h) for gram = (*h, w), k = len(gram) <= order."""
        p = 1.0 / (self.vocab_size + 1)
        for k in range(1, len(gram) + 1):                                # from the unigram level up
            p = self.level(gram[len(gram) - k:], p)
        return p

    def level(self, gram, lower: float) -> float:
        k = len(gram)
        keys, a = self.tables[k - 1]
        ctx_keys, total, distinct = self.contexts[k - 1]
        h = encode(gram[:-1], self.base)
        j = np.searchsorted(ctx_keys, h)
        if j == len(ctx_keys) or ctx_keys[j] != h:                       # context never seen
            return lower
        i = np.searchsorted(keys, encode(gram, self.base))
        seen = a[i] if i < len(keys) and keys[i] == encode(gram, self.base) else 0.0
        return max(seen - self.discount, 0.0) / total[j] + self.discount * distinct[j] / total[j] * lower

    def sentence_log_prob(self, sentence) -> float:
        stream = self.padded(sentence)
        n = self.order
        return float(sum(np.log(self.prob(tuple(int(t) for t in stream[i - n + 1:i + 1])))
                         for i in range(n - 1, len(stream))))


def max_order(vocab_size: int) -> int:
    """The longest gram whose key (base vocab_size + 2) fits in an int64."""
    order, base = 1, vocab_size + 2
    while base ** (order + 1) < 2 ** 62:
        order += 1
    return order


def encode(gram, base) -> int:
    key = 0
    for t in gram:
        key = key * base + int(t)
    return key


def count_grams(streams, k, base):
    """-> (sorted distinct keys, counts) of every k-gram in the padded streams (none across
    sentences), skipping grams made only of <s> padding."""
    keys = []
    for s in streams:
        if len(s) >= k:
            windows = np.lib.stride_tricks.sliding_window_view(s, k)            # (len - k + 1, k)
            keys.append(windows @ (base ** np.arange(k - 1, -1, -1, dtype=np.int64)))
    keys = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    bos = base - 2
    keys = keys[keys % base != bos]                                       # a gram ending in <s> predicts nothing
    return np.unique(keys, return_counts=True)


def context_sums(keys, a, base):
    """-> (sorted distinct contexts h, A(h) = sum_x a(h x), N(h) = |{x : a(h x) > 0}|)."""
    contexts = keys // base
    distinct, first = np.unique(contexts, return_index=True)
    total = np.add.reduceat(a, first) if len(a) else np.zeros(0)
    count = np.add.reduceat((a > 0).astype(np.float64), first) if len(a) else np.zeros(0)
    return distinct, total, count
