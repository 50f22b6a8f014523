"""Learn a WordPiece vocabulary from text: start from characters, merge the best pair until full.

  1. Split the texts into words with the same BasicTokenizer BertTokenizer uses; count them.
  2. Spell each word as characters, "##" on all but the first: "hugs" -> h ##u ##g ##s.
     The alphabet is every character seen at least min_frequency times, in the positions
     (first / "##") it was seen in; words with a rarer character cannot be spelled and are left out.
  3. Repeatedly merge the adjacent pair (a, b) with the best score into one symbol, a + b
     without b's "##", and add it to the vocabulary. WordPiece's score is the gain in the
     training text's log-likelihood under a unigram model of the symbols (Schuster & Nakajima
     2012): replacing the count(ab) pairs by one symbol each gains, to first order,
         score="likelihood":  count(ab) * log(count(ab) * N / (count(a) * count(b)))
     with N the number of symbols at the start. score="ratio" drops the weight and the log,
         score="ratio":       count(ab) / (count(a) * count(b))
     (the form in Hugging Face's course); it favours rare pairs and makes a vocabulary that needs
     about twice as many tokens per text (docs/tokenizer.md). Only pairs seen at least
     min_frequency times are merged. Ties go to the pair that sorts first.
  4. Stop at vocab_size tokens, or when no pair is left.

Counts are kept incrementally: a merge rewrites only the words that contain the pair, and a heap
holds the scores; since a merge changes count(a) and count(b), every pair sharing a symbol with
the merged one is re-scored. docs/tokenizer.md has the details and timings.
"""
from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict

from npbert.errors import DataError, InputError
from npbert.tokenizer.normalize import BasicTokenizer
from npbert.tokenizer.vocab import SPECIAL_TOKENS
from npbert.tokenizer.wordpiece import CONTINUATION, MAX_WORD_CHARS


def count_words(texts, basic: BasicTokenizer) -> Counter:
    counts = Counter()
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"training text {i} must be a str, got {type(text).__name__}")
        counts.update(basic.split(text))
    return counts


def spell(word: str) -> list[str]:
    """A word as its first character and "##"-marked continuation characters."""
    return [word[0]] + [CONTINUATION + c for c in word[1:]]


def merge_symbols(a: str, b: str) -> str:
    return a + b.removeprefix(CONTINUATION)


def alphabet(word_counts: Counter, min_frequency: int) -> list[str]:
    """Characters seen at least min_frequency times, in each position (first, ##) they occur in."""
    char_counts, symbols = Counter(), set()
    for word, n in word_counts.items():
        for c in word:
            char_counts[c] += n
        symbols.update(spell(word))
    frequent = {c for c, n in char_counts.items() if n >= min_frequency}
    return sorted(s for s in symbols if s.removeprefix(CONTINUATION) in frequent)


SCORES = ("likelihood", "ratio")


class _Merger:
    """The state of the merge loop: words as symbol lists, pair and symbol counts, a score heap."""

    def __init__(self, words: list[list[str]], freqs: list[int], min_frequency: int, score: str):
        self.words, self.freqs, self.min_frequency = words, freqs, min_frequency
        self.symbol_count = Counter()
        self.pair_count = Counter()
        self.pair_words = defaultdict(set)     # pair -> indices of words that (may) contain it
        self.symbol_pairs = defaultdict(set)   # symbol -> pairs it is (or was) part of
        for i, symbols in enumerate(words):
            self._count(i, symbols, +1)
        self.log_n = math.log(max(1, sum(self.symbol_count.values())))  # fixed: see "likelihood" above
        self.likelihood = score == "likelihood"
        self.heap = []
        self.pushed = {}                       # pair -> the score of its live heap entry
        for pair in sorted(self.pair_count):
            self._push(pair)

    def _count(self, i, symbols, sign):
        n = sign * self.freqs[i]
        for s in symbols:
            self.symbol_count[s] += n
        for pair in zip(symbols, symbols[1:]):
            self.pair_count[pair] += n
            if sign > 0:
                self.pair_words[pair].add(i)
                self.symbol_pairs[pair[0]].add(pair)
                self.symbol_pairs[pair[1]].add(pair)

    def score(self, pair) -> float:
        n_ab, n_a, n_b = self.pair_count[pair], self.symbol_count[pair[0]], self.symbol_count[pair[1]]
        if self.likelihood:
            return n_ab * (math.log(n_ab) + self.log_n - math.log(n_a) - math.log(n_b))
        return n_ab / (n_a * n_b)

    def _push(self, pair):
        if self.pair_count[pair] < self.min_frequency:
            self.pushed.pop(pair, None)
            return
        score = self.score(pair)
        if self.pushed.get(pair) != score:
            self.pushed[pair] = score
            heapq.heappush(self.heap, (-score, pair))

    def best_pair(self):
        """The pair with the highest current score (ties: the first in sort order), or None."""
        while self.heap:
            neg_score, pair = heapq.heappop(self.heap)
            if self.pushed.get(pair) == -neg_score:
                del self.pushed[pair]
                return pair
            # stale: the pair was merged away or re-scored (its fresh entry is also in the heap)
        return None

    def merge(self, pair) -> str:
        a, b = pair
        new = merge_symbols(a, b)
        touched = set()
        for i in self.pair_words.pop(pair):
            old = self.words[i]
            if pair not in zip(old, old[1:]):
                continue
            merged, k = [], 0
            while k < len(old):
                if k + 1 < len(old) and old[k] == a and old[k + 1] == b:
                    merged.append(new)
                    k += 2
                else:
                    merged.append(old[k])
                    k += 1
            self._count(i, old, -1)
            self._count(i, merged, +1)
            self.words[i] = merged
            touched.update(zip(old, old[1:]))
            touched.update(zip(merged, merged[1:]))
        # count(a), count(b) and count(new) changed: every pair containing them has a new score
        for symbol in (a, b, new):
            alive = {p for p in self.symbol_pairs[symbol] if self.pair_count[p] > 0}
            self.symbol_pairs[symbol] = alive
            touched |= alive
        for p in touched:
            if p != pair:
                self._push(p)
        return new


def train_wordpiece_vocab(texts, vocab_size: int, do_lower_case: bool = True, min_frequency: int = 2,
                          special_tokens=SPECIAL_TOKENS, strip_accents=None, tokenize_chinese_chars: bool = True,
                          max_input_chars_per_word: int = MAX_WORD_CHARS, score: str = "likelihood",
                          progress=None) -> list[str]:
    """A WordPiece vocabulary learned from `texts` (an iterable of str): the special tokens
    first (ids 0, 1, ...), then the alphabet, then merged pieces in the order learned.
    Deterministic. The tokenizer options must be those the vocabulary will be used with.
    progress(n): called with the vocabulary's size as each merged piece is added."""
    special_tokens = list(special_tokens)
    if len(set(special_tokens)) != len(special_tokens) or not all(isinstance(t, str) and t for t in special_tokens):
        raise InputError(f"special_tokens must be distinct non-empty strings, got {special_tokens!r}")
    for name, value in (("vocab_size", vocab_size), ("min_frequency", min_frequency),
                        ("max_input_chars_per_word", max_input_chars_per_word)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"{name} must be a positive integer, got {value!r}")
    if score not in SCORES:
        raise InputError(f"score must be one of {SCORES}, got {score!r}")

    basic = BasicTokenizer(do_lower_case, strip_accents, tokenize_chinese_chars)
    word_counts = count_words(texts, basic)
    if not word_counts:
        raise DataError("the training texts contain no words")
    chars = alphabet(word_counts, min_frequency)
    vocab = special_tokens + [c for c in chars if c not in special_tokens]
    if len(vocab) > vocab_size:
        raise InputError(f"vocab_size={vocab_size} is too small for the {len(special_tokens)} special tokens and "
                         f"the {len(chars)} characters seen at least {min_frequency} times; "
                         f"raise vocab_size or min_frequency")

    # Words a tokenizer would map to [UNK] anyway (too long, or with a rare character) are left out.
    known = set(chars)
    spelled = [(spell(w), n) for w, n in sorted(word_counts.items())
               if len(w) <= max_input_chars_per_word and all(s in known for s in spell(w))]
    merger = _Merger([s for s, _ in spelled], [n for _, n in spelled], min_frequency, score)
    in_vocab = set(vocab)
    while len(vocab) < vocab_size:
        pair = merger.best_pair()
        if pair is None:
            break
        new = merger.merge(pair)
        if new not in in_vocab:  # different pairs can spell the same piece
            vocab.append(new)
            in_vocab.add(new)
            if progress is not None:
                progress(len(vocab))
    return vocab
