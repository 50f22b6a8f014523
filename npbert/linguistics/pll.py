"""Pseudo-log-likelihood of a sentence under a masked LM (Salazar et al. 2020, "Masked Language
Model Scoring"): mask each piece in turn and add up the log-probability of the true piece,

    PLL(w_1 .. w_n) = sum_i log p(w_i | [CLS] w_1 .. w_{i-1} [MASK] w_{i+1} .. w_n [SEP])

[CLS] and [SEP] are never masked. A sentence of n pieces is n masked copies of n + 2 tokens.

The copies run through masked_lm_log_probs (npbert/inference.py): the packed forward with
no padding at all (sentences are grouped by length, so every copy in a batch is as long as the
others), the last layer and the MLM decoder only at the one masked row of each copy, and only
log p(target) of each row kept (the decoder a block of rows at a time: no (M, V) log-probs). Sentences
with the same pieces are scored once, so two sentences that tokenize alike get the very same
score (a tie, not two roundings of one number).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from npbert.errors import InputError
from npbert.inference import masked_lm_log_probs

DEFAULT_BATCH_TOKENS = 4096   # tokens of masked copies per forward: big enough for BLAS, small in memory


def masked_copies(ids, mask_id):
    """ids: (S, L) S sentences of L tokens, [CLS] first and [SEP] last -> the S * n masked copies
    (n = L - 2 pieces each): input_ids (S * n, L), positions (S * n,) flat indices of the masked
    tokens into the (S * n) * L batch, targets (S * n,) the true pieces there."""
    S, L = ids.shape
    n = L - 2
    copies = np.repeat(ids, n, axis=0)                              # (S * n, L) copy c of sentence c // n
    column = np.tile(np.arange(1, n + 1), S)                        # (S * n,) masks piece c % n
    row = np.arange(S * n)                                          # (S * n,)
    targets = copies[row, column].copy()                            # (S * n,)
    copies[row, column] = mask_id
    return copies, row * L + column, targets


def token_log_probs(params, config, sentences, special_ids, batch_tokens=DEFAULT_BATCH_TOKENS,
                    progress=None) -> list:
    """sentences: lists of piece ids (no [CLS] / [SEP]) -> for each, its (n,) float64 array of
    log p(w_i | the sentence with w_i masked); their sum is the PLL. special_ids: (cls, sep,
    mask). progress(copies_done) is called after each batch."""
    cls_id, sep_id, mask_id = special_ids
    params = {k: v for k, v in params.items() if not k.startswith("bert.pooler.")}   # else the last layer
    unique, index = unique_sentences(sentences)                                     # runs at [CLS] too
    check_sentences(unique, config)
    scores = [None] * len(unique)
    done = 0
    for length, members in sorted(by_length(unique).items()):
        per_batch = max(1, batch_tokens // (length * (length + 2)))         # sentences a batch holds
        for start in range(0, len(members), per_batch):
            group = members[start:start + per_batch]
            ids = np.array([[cls_id, *unique[k], sep_id] for k in group])   # (S, n + 2)
            copies, positions, targets = masked_copies(ids, mask_id)         # (S * n, n + 2)
            logp = masked_lm_log_probs(params, config, copies, mlm_positions=positions,
                                       targets=targets).reshape(len(group), length)   # (S, n) float64
            for k, row in zip(group, logp):
                scores[k] = row
            done += len(targets)
            if progress is not None:
                progress(done)
    return [scores[k] for k in index]


def pseudo_log_likelihoods(params, config, sentences, special_ids, batch_tokens=DEFAULT_BATCH_TOKENS,
                           progress=None) -> np.ndarray:
    """(len(sentences),) float64: each sentence's PLL (token_log_probs summed in order)."""
    rows = token_log_probs(params, config, sentences, special_ids, batch_tokens, progress)
    return np.array([float(np.sum(r)) for r in rows])


def unique_sentences(sentences):
    """-> (the distinct piece sequences, for each sentence the index of its own among them)."""
    seen, unique, index = {}, [], []
    for s in sentences:
        key = tuple(int(i) for i in s)
        if key not in seen:
            seen[key] = len(unique)
            unique.append(key)
        index.append(seen[key])
    return unique, index


def by_length(sentences) -> dict:
    """{n pieces: [indices of the sentences of that length]}."""
    groups = defaultdict(list)
    for k, s in enumerate(sentences):
        groups[len(s)].append(k)
    return groups


def check_sentences(sentences, config) -> None:
    """One clear error for what the model cannot score, before any work is done."""
    for s in sentences:
        if len(s) == 0:
            raise InputError("a sentence has no pieces to score (an empty sentence)")
        if len(s) + 2 > config.max_position_embeddings:
            raise InputError(f"a sentence of {len(s)} pieces needs {len(s) + 2} positions with [CLS] and [SEP], "
                             f"more than the model's max_position_embeddings ({config.max_position_embeddings})")
        bad = [i for i in s if not 0 <= i < config.vocab_size]
        if bad:
            raise InputError(f"token id {bad[0]} is outside the model's vocabulary (vocab_size {config.vocab_size})")
