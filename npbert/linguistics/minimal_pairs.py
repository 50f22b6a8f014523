"""Score minimal pairs with a masked LM and beside it with the baselines: which of two sentences
does each scorer prefer? (`npbert minimal-pairs`; the data: pairs.py; the scorers: pll.py for a
BERT, counting.py for the counting baselines; the verdicts: accuracy.py.)

Every sentence is tokenized once with the checkpoint's tokenizer; every scorer sees the same
pieces, so a baseline and the BERT are compared on exactly the same input.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from npbert.data.progress import Progress
from npbert.errors import CheckpointError, DataError
from npbert.linguistics import pairs as pairs_file
from npbert.linguistics.accuracy import correct, group_accuracies
from npbert.linguistics.pll import DEFAULT_BATCH_TOKENS, pseudo_log_likelihoods, unique_sentences
from npbert.model_params import init_params


@dataclass
class TokenizedPairs:
    pairs: list                 # MinimalPair records
    good: list                  # piece ids of each good sentence (no [CLS] / [SEP])
    bad: list
    good_pieces: list           # the same as strings, for --scores
    bad_pieces: list
    has_unk: np.ndarray         # (P,) bool: either sentence holds [UNK]

    def without_unk(self) -> "TokenizedPairs":
        """The pairs with no [UNK] piece in either sentence (a DataError when none is left)."""
        keep = np.flatnonzero(~self.has_unk)
        if len(keep) == 0:
            raise DataError(f"all {len(self.pairs):,} pairs hold [UNK]: none is left to score without them")
        pick = (lambda items: [items[k] for k in keep])
        return TokenizedPairs(pick(self.pairs), pick(self.good), pick(self.bad), pick(self.good_pieces),
                              pick(self.bad_pieces), self.has_unk[keep])


@dataclass
class ScoredPairs:
    tokenized: TokenizedPairs
    scores: dict = field(default_factory=dict)    # {scorer: (good (P,), bad (P,)) float64 log-probabilities}
    costs: dict = field(default_factory=dict)     # {scorer: ScoringCost} for the BERTs

    def accuracies(self) -> list:
        """GroupAccuracy rows (accuracy.py): every scorer, overall and per field, phenomenon, paradigm."""
        outcomes = {name: correct(good, bad) for name, (good, bad) in self.scores.items()}
        return group_accuracies(self.tokenized.pairs, outcomes)


@dataclass(frozen=True)
class ScoringCost:
    sentences: int              # distinct sentences scored
    copies: int                 # masked copies run (one per piece)
    tokens: int                 # tokens of those copies, [CLS] and [SEP] included
    flops: float                # the multiply-adds' floating-point operations the inference did, x 2
    cpu_seconds: float


def tokenize_pairs(tokenizer, pairs, max_positions: int, say=None) -> TokenizedPairs:
    """Tokenize both sentences of every pair; a DataError naming file and line for a sentence
    with no pieces or too long for the model's positions. say: where a line of progress goes
    every PROGRESS_SECONDS of a long tokenization (npbert/linguistics/pairs.py) (None: nowhere)."""
    good, bad, good_pieces, bad_pieces, unk = [], [], [], [], []
    progress = Progress(say or (lambda line: None), "tokenizing", unit="pairs", total=len(pairs),
                        every=pairs_file.PROGRESS_SECONDS)
    for p in progress.over(pairs):
        ids_pair = []
        for which, text, out_ids, out_pieces in (("good", p.good, good, good_pieces), ("bad", p.bad, bad, bad_pieces)):
            pieces = tokenizer.tokenize(text)
            if not pieces:
                raise DataError(f"{p.where}: sentence_{which} has no pieces to score: {text!r}")
            if len(pieces) + 2 > max_positions:
                raise DataError(f"{p.where}: sentence_{which} is {len(pieces)} pieces, {len(pieces) + 2} positions "
                                f"with [CLS] and [SEP]: more than the model's {max_positions}")
            out_pieces.append(pieces)
            out_ids.append(tokenizer.convert_tokens_to_ids(pieces))
            ids_pair.append(out_ids[-1])
        unk.append(any(tokenizer.unk_token_id in ids for ids in ids_pair))
    return TokenizedPairs(pairs, good, bad, good_pieces, bad_pieces, np.array(unk, bool))


def require_mlm_head(params, config, where: str) -> None:
    if "cls.predictions.bias" not in params:
        what = "/".join(config.extra.get("architectures") or ["BertModel"])
        raise CheckpointError(f"{where} is a {what} with no masked-LM head (cls.predictions.*): minimal pairs are "
                              "scored by the masked LM's pseudo-log-likelihood")


def score_with_bert(scored: ScoredPairs, name, params, config, tokenizer, batch_tokens=DEFAULT_BATCH_TOKENS,
                    log=print) -> None:
    """Add the BERT's PLLs of both sentences of every pair to `scored` under `name`."""
    t = scored.tokenized
    unique, index = unique_sentences(t.good + t.bad)      # each distinct sentence scored once
    copies = sum(len(s) for s in unique)
    progress = Progress(log, f"{name}: scoring", unit="masked copies", total=copies,
                        every=pairs_file.PROGRESS_SECONDS)
    special = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id)
    start = time.process_time()                           # the rate is the scoring's alone
    pll = pseudo_log_likelihoods(params, config, unique, special, batch_tokens, progress.update)[index]
    cost = ScoringCost(len(unique), copies, sum(len(s) * (len(s) + 2) for s in unique),
                       sum(inference_flops(config, len(s)) for s in unique), time.process_time() - start)
    P = len(t.pairs)
    scored.scores[name] = (pll[:P], pll[P:])
    scored.costs[name] = cost


def inference_flops(config, n: int) -> float:
    """Floating-point operations of the matmuls scoring one sentence of n pieces: n copies of
    n + 2 tokens; every layer but the last at every token, the last layer's keys and values at
    every token and the rest of it, the MLM transform and the decoder at the masked row only."""
    H, I, V, L = config.hidden_size, config.intermediate_size, config.vocab_size, config.num_hidden_layers
    tokens = n * (n + 2)
    layer = 4 * H * H + 2 * H * I                       # multiply-adds a token: q, k, v, output, feed-forward
    attention = 2 * (n + 2) * H                         # a query's scores and context over n + 2 keys
    every_row = tokens * ((L - 1) * (layer + attention) + 2 * H * H)
    read_row = n * (2 * H * H + 2 * H * I + attention + H * H + H * V)
    return 2.0 * (every_row + read_row)


def score_with_counts(scored: ScoredPairs, model) -> None:
    """Add a counting model's log-probabilities of both sentences (model.name the scorer)."""
    t = scored.tokenized
    scored.scores[model.name] = (np.array([model.sentence_log_prob(s) for s in t.good]),
                                 np.array([model.sentence_log_prob(s) for s in t.bad]))


def random_like(loaded, seed: int) -> dict:
    """A BERT of the checkpoint's size and dtype with BERT's random initialisation (the control:
    what the architecture and the scoring give before any training)."""
    dtype = next(iter(loaded.params.values())).dtype
    return init_params(loaded.config, np.random.default_rng(seed), dtype=dtype)


def format_cost(cost: ScoringCost) -> str:
    seconds = max(cost.cpu_seconds, 1e-9)
    return (f"scored {cost.sentences:,} distinct sentences: {cost.copies:,} masked copies, {cost.tokens:,} tokens, in "
            f"{seconds / 60:.1f} min of CPU ({cost.tokens / seconds:,.0f} tokens/s, {cost.copies / seconds:,.0f} "
            f"copies/s, {cost.flops / seconds / 1e9:.1f} GFLOP/s)")
