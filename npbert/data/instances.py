"""Pretraining instances: documents of tokenized sentences -> masked (A, B) sentence pairs, or
masked single sentences.

The algorithm is google-research/bert's `create_pretraining_data.py`, step for step, with a
numpy Generator as the only source of randomness:

  * per document (and per dupe pass) a target length: max_seq_length - 3, or with probability
    short_seq_prob a random length in [2, max_seq_length - 3] (short inputs like fine-tuning's);
  * whole sentences accumulate into a chunk until the target is reached (or the document ends);
    a random cut `a_end` splits the chunk into A and the rest;
  * 50%: B = the rest of the chunk (IsNext). Otherwise (and always when the chunk is a single
    sentence) B = sentences from a random point of ANOTHER document (NotNext), and the unused
    sentences of the chunk are put back so they start the next chunk;
  * the longer of A/B loses a token from the front or the back (coin flip) until they fit;
  * [CLS] A [SEP] B [SEP], segment ids 0 then 1;
  * num_to_predict = min(max_predictions_per_seq, max(1, round(len(tokens) * masked_lm_prob)))
    positions among the shuffled candidates (never [CLS]/[SEP]); each chosen one becomes
    [MASK] 80%, itself 10%, a uniformly random vocabulary id 10% (the mask mix MASK/SAME/RND,
    80/10/10 unless options.mask_mix says otherwise: the BERT paper's Table 8). With whole-word masking a
    candidate is a word (a token and its following ## pieces), and a word that would overshoot
    num_to_predict is skipped, as in the original.

Single sentences (kind "sentences": BabyBERTa's one utterance an input, Huebner et al. 2021):
every sentence of every document is an instance `[CLS] sentence [SEP]`, segment ids 0, masked as
above, with no next-sentence label to learn (IS_NEXT is stored, and pretraining refuses NSP on
such data); a sentence longer than max_seq_length - 2 is cut into consecutive windows of that
many tokens, so no text is dropped. short_seq_prob does not apply.

Two deliberate differences: the other document for NotNext is drawn uniformly from the other
documents (the original retries up to 10 times and could, rarely, pick the same one), and a ##
piece right after [SEP] starts a word of its own instead of joining the word before [SEP].
NSP labels follow Hugging Face: 0 = IsNext, 1 = NotNext.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from npbert.errors import DataError

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
IS_NEXT, NOT_NEXT = 0, 1
DEFAULT_MASK_MIX = "80/10/10"   # MASK/SAME/RND percentages of the chosen positions, the paper's order
INSTANCE_KINDS = ("pairs", "sentences")   # [CLS] A [SEP] B [SEP] with an NSP label; [CLS] sentence [SEP]


@dataclass(frozen=True)
class VocabIds:
    """What the instance builder needs to know about a vocabulary."""
    pad_id: int
    unk_id: int
    cls_id: int
    sep_id: int
    mask_id: int
    vocab_size: int
    continuation_ids: frozenset  # ids of "##" pieces, for whole-word masking

    @classmethod
    def from_tokens(cls, tokens, source="vocabulary") -> "VocabIds":
        """tokens: the vocabulary in id order (vocab.txt lines)."""
        index = {}
        for i, t in enumerate(tokens):
            index.setdefault(t, i)
        missing = [t for t in SPECIAL_TOKENS if t not in index]
        if missing:
            raise DataError(f"{source} lacks the special token(s) {', '.join(missing)}; "
                            f"a BERT vocabulary needs all of {' '.join(SPECIAL_TOKENS)}")
        return cls(pad_id=index["[PAD]"], unk_id=index["[UNK]"], cls_id=index["[CLS]"], sep_id=index["[SEP]"],
                   mask_id=index["[MASK]"], vocab_size=len(tokens),
                   continuation_ids=frozenset(i for i, t in enumerate(tokens) if t.startswith("##")))


@dataclass(frozen=True)
class InstanceOptions:
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    whole_word_mask: bool = False
    mask_mix: str = DEFAULT_MASK_MIX
    kind: str = "pairs"                                   # one of INSTANCE_KINDS

    def __post_init__(self):
        if self.kind not in INSTANCE_KINDS:
            raise DataError(f"instances must be one of {', '.join(INSTANCE_KINDS)}, got {self.kind!r}")
        if not isinstance(self.max_seq_length, int) or self.max_seq_length < 5:
            raise DataError(f"max_seq_length must be an integer >= 5 ([CLS] A [SEP] B [SEP]), "
                            f"got {self.max_seq_length!r}")
        if not isinstance(self.max_predictions_per_seq, int) or self.max_predictions_per_seq < 1:
            raise DataError(f"max_predictions_per_seq must be a positive integer, got {self.max_predictions_per_seq!r}")
        if self.max_predictions_per_seq > self.max_seq_length:    # every instance gets this many slots: 1e9 was 363 GiB
            raise DataError(f"max_predictions_per_seq {self.max_predictions_per_seq:,} is more than the "
                            f"{self.max_seq_length} positions of an instance (max_seq_length): give at most "
                            f"{self.max_seq_length}")
        if not 0.0 < self.masked_lm_prob < 1.0:
            raise DataError(f"masked_lm_prob must be in (0, 1), got {self.masked_lm_prob!r}")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise DataError(f"short_seq_prob must be in [0, 1], got {self.short_seq_prob!r}")
        parse_mask_mix(self.mask_mix)


def parse_mask_mix(mix) -> tuple:
    """"MASK/SAME/RND", e.g. "80/10/10" -> (80, 10, 10): whole percentages of the chosen positions
    shown as [MASK], left as they are, replaced by a random token; a DataError otherwise."""
    match = re.fullmatch(r"(\d{1,3})/(\d{1,3})/(\d{1,3})", mix.strip(), re.ASCII) if isinstance(mix, str) else None
    if match is None:
        raise DataError(f"mask_mix must be three whole percentages MASK/SAME/RND (the share of the chosen positions "
                        f"shown as [MASK], left unchanged, replaced by a random token), e.g. 80/10/10 or 100/0/0; "
                        f"got {mix!r}")
    shares = tuple(int(g) for g in match.groups())
    if sum(shares) != 100:
        raise DataError(f"mask_mix {mix} sums to {sum(shares)}%, not 100%: MASK/SAME/RND share out the chosen positions")
    return shares


def canonical_mask_mix(mix) -> str:
    """The mix as recorded in manifests and checkpoints: " 080/10/10" -> "80/10/10"."""
    return "/".join(map(str, parse_mask_mix(mix)))


def mask_thresholds(mix) -> tuple:
    """(mask_below, random_from): a chosen position whose first draw is below mask_below becomes
    [MASK]; otherwise it becomes a random token if its second draw is at least random_from, and
    stays itself if not. 80/10/10 gives (0.8, 0.5), the original's constants to the bit, and every
    mix makes the same draws, so mixes differ only in what the chosen positions show."""
    mask, same, random = parse_mask_mix(mix)
    rest = same + random
    return mask / 100, same / rest if rest else 1.0


class Instance(NamedTuple):
    tokens: list               # ids of [CLS] A [SEP] B [SEP], after masking
    num_a: int                 # len(A): segment ids are 0 for the first num_a + 2 tokens, then 1
    masked_lm_positions: list  # ascending positions into tokens
    masked_lm_labels: list     # the original ids there
    next_sentence_label: int   # IS_NEXT (0) or NOT_NEXT (1)


def create_instances(documents, doc_indices, vocab: VocabIds, options: InstanceOptions, rng) -> list:
    """One pass over documents[doc_indices] -> their instances, shuffled.
    documents: list of documents, each a non-empty list of non-empty token-id lists (sentences);
    NotNext segments are drawn from all of `documents`."""
    if options.kind == "sentences":
        instances = [i for d in doc_indices for i in sentence_instances(documents[d], vocab, options, rng)]
        rng.shuffle(instances)
        return instances
    if len(documents) < 2:
        raise DataError(f"next-sentence prediction needs at least 2 documents (a NotNext segment comes from "
                        f"another document), got {len(documents)}")
    instances = []
    for d in doc_indices:
        instances.extend(create_instances_from_document(documents, d, vocab, options, rng))
    rng.shuffle(instances)
    return instances


def create_instances_from_document(documents, doc_index, vocab: VocabIds, options: InstanceOptions, rng) -> list:
    document = documents[doc_index]
    max_num_tokens = options.max_seq_length - 3           # room for [CLS], [SEP], [SEP]
    target_seq_length = max_num_tokens
    if rng.random() < options.short_seq_prob:            # sometimes short, like fine-tuning inputs
        target_seq_length = int(rng.integers(2, max_num_tokens + 1))
    instances = []
    chunk, chunk_length = [], 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target_seq_length:
            a_end = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            if len(chunk) == 1 or rng.random() < 0.5:
                label = NOT_NEXT
                tokens_b = random_segment(documents, doc_index, target_seq_length - len(tokens_a), rng)
                i -= len(chunk) - a_end                  # put the unused sentences back
            else:
                label = IS_NEXT
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
            truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            tokens = [vocab.cls_id, *tokens_a, vocab.sep_id, *tokens_b, vocab.sep_id]
            masked, positions, labels = create_masked_lm_predictions(tokens, vocab, options, rng)
            instances.append(Instance(masked, len(tokens_a), positions, labels, label))
            chunk, chunk_length = [], 0
        i += 1
    return instances


def sentence_instances(document, vocab: VocabIds, options: InstanceOptions, rng) -> list:
    """Every sentence of a document as [CLS] sentence [SEP] (a long one in windows), masked."""
    width = options.max_seq_length - 2                    # room for [CLS] and [SEP]
    instances = []
    for sentence in document:
        for start in range(0, len(sentence), width):
            piece = sentence[start:start + width]
            tokens = [vocab.cls_id, *piece, vocab.sep_id]
            masked, positions, labels = create_masked_lm_predictions(tokens, vocab, options, rng)
            instances.append(Instance(masked, len(piece), positions, labels, IS_NEXT))
    return instances


def random_segment(documents, doc_index, target_length, rng) -> list:
    """Sentences from a random start in a random other document, until target_length tokens."""
    other = int(rng.integers(len(documents) - 1))
    other += other >= doc_index                           # uniform over the other documents
    document = documents[other]
    tokens = []
    for sentence in document[int(rng.integers(len(document))):]:
        tokens.extend(sentence)
        if len(tokens) >= target_length:
            break
    return tokens


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng) -> None:
    """Shorten the longer list (B on ties) in place, from the front or back at random, until they fit."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def num_to_predict(num_tokens, options: InstanceOptions) -> int:
    """How many positions to predict; num_tokens counts [CLS] and [SEP] too, as the original does."""
    return min(options.max_predictions_per_seq, max(1, int(round(num_tokens * options.masked_lm_prob))))


def create_masked_lm_predictions(tokens, vocab: VocabIds, options: InstanceOptions, rng):
    """-> (masked tokens, ascending positions, original ids at those positions)."""
    words = []                                            # candidate units: lists of positions
    for i, t in enumerate(tokens):
        if t == vocab.cls_id or t == vocab.sep_id:
            continue
        if options.whole_word_mask and t in vocab.continuation_ids and words and words[-1][-1] == i - 1:
            words[-1].append(i)
        else:
            words.append([i])
    rng.shuffle(words)
    budget = num_to_predict(len(tokens), options)
    chosen = []
    for word in words:
        if len(chosen) >= budget:
            break
        if len(chosen) + len(word) > budget:              # a whole word that would overshoot is skipped
            continue
        chosen.extend(word)                               # candidates are disjoint: never covered twice
    chosen.sort()
    n = len(chosen)
    action, keep_or_random, random_ids = rng.random(n), rng.random(n), rng.integers(vocab.vocab_size, size=n)
    mask_below, random_from = mask_thresholds(options.mask_mix)
    masked = list(tokens)
    labels = [tokens[p] for p in chosen]
    for k, p in enumerate(chosen):
        if action[k] < mask_below:
            masked[p] = vocab.mask_id                     # MASK (80%): [MASK]
        elif keep_or_random[k] >= random_from:
            masked[p] = int(random_ids[k])               # RND (10%): a random token
        # else SAME (10%): unchanged, so the model cannot assume a visible token is never a target
    return masked, chosen, labels
