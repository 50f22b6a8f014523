"""Demo 12 - what a pretrained BERT learned of language: minimal pairs and attention heads.

    python demos/12_what_it_learned.py           (the measurements: docs/linguistics.md)
    python demos/12_what_it_learned.py --plot    (also writes 12_what_it_learned.png, if matplotlib is installed)

The model is the default run's, `npbert pretrain` (runs/pretrain/checkpoint: 2 layers, hidden
128, trained on the built-in stories); without one, the demo pretrains a quick 60-step model
first (about 10 s), which has learnt much less.

    PLL(sentence) = sum_i log p(w_i | the sentence with w_i masked)
    a minimal pair is right when PLL(good) > PLL(bad); a tie is wrong
"""
import contextlib
import io
import os
import tempfile

from demo_common import arguments, ok, pyplot, show, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert.checkpoint import load_pretrained
from npbert.cli import main as npbert
from npbert.linguistics.attention_heads import STATISTICS, TARGETS, head_statistics, named_heads
from npbert.linguistics.builtin_pairs import builtin_pairs
from npbert.linguistics.counting import UnigramModel
from npbert.linguistics.minimal_pairs import ScoredPairs, score_with_bert, score_with_counts, tokenize_pairs
from npbert.linguistics.pll import token_log_probs
from npbert.linguistics.seen_corpus import heldout_batches, pretraining_data_of, training_sentences
from npbert.plotting import head_statistics as head_figure

DEFAULT_RUN = os.path.join("runs", "pretrain")
args = arguments(__doc__, picture=True)

# %% [markdown]
# > from docs/linguistics.md: intro
# > from docs/linguistics.md: Minimal pairs

# %%
stage("The model: the default run's, or a quick one made now.")
run = DEFAULT_RUN
if not os.path.isfile(os.path.join(run, "checkpoint", "config.json")):
    scratch = tempfile.TemporaryDirectory(prefix="npbert-demo12-")   # removed when the demo ends
    run = os.path.join(scratch.name, "pretrain")
    print(f"   no {DEFAULT_RUN} yet (`npbert pretrain` makes it, ~4 min): pretraining 60 steps into {run} ...")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = npbert(["pretrain", "--out", run, "--steps", "60", "--max-documents", "500", "--eval-every", "0",
                       "--backend", "numpy"])          # no kernels to load for a one-minute model
    ok(code == 0, "the quick model is pretrained")
loaded = load_pretrained(os.path.join(run, "checkpoint"))
params, config, tokenizer = loaded.params, loaded.config, loaded.tokenizer
print(f"   {run}: {config.num_hidden_layers} layers, hidden {config.hidden_size}, {config.vocab_size} words")
special = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id)

# %%
stage("One sentence, one masked copy per piece: the pseudo-log-likelihood.")
sentence = "The friend of the students was tired."
pieces = tokenizer.tokenize(sentence)
ids = tokenizer.convert_tokens_to_ids(pieces)
logp = token_log_probs(params, config, [ids], special)[0]                  # (n,) log p(w_i | rest)
for i, (piece, lp) in enumerate(zip(pieces, logp)):
    masked = " ".join("[MASK]" if j == i else p for j, p in enumerate(pieces))
    print(f"   [CLS] {masked} [SEP]   log p({piece!r}) = {lp:7.3f}")
pll = float(np.sum(logp))
print(f"   PLL = {pll:.3f}")
ok(len(logp) == len(pieces) and (logp < 0).all(), "one log-probability per piece, each below 0")

# %%
stage("A pair of each paradigm: the model prefers the sentence with the higher PLL.")
pairs = [next(p for p in builtin_pairs() if p.paradigm == uid) for uid in dict.fromkeys(
    p.paradigm for p in builtin_pairs())]
tokenized = tokenize_pairs(tokenizer, pairs, config.max_position_embeddings)
scored = ScoredPairs(tokenized)
score_with_bert(scored, "bert", params, config, tokenizer, log=lambda *_: None)
good, bad = scored.scores["bert"]
for p, g, b in zip(pairs, good, bad):
    print(f"   {'right' if g > b else 'WRONG'}  {g:7.2f} {p.good:<40} {b:7.2f} {p.bad}")
ok(len(good) == 6, "six paradigms, one pair each")

# %%
stage("A tie is wrong: the unigram baseline cannot tell two orders of the same words apart.")
unigram = UnigramModel(training_sentences(pretraining_data_of(os.path.join(run, "checkpoint")),
                                          tokenizer.ids_to_tokens), config.vocab_size)
same_words = ["the", "children", "play", "chess", "."]
a = unigram.sentence_log_prob(tokenizer.convert_tokens_to_ids(same_words))
b = unigram.sentence_log_prob(tokenizer.convert_tokens_to_ids(same_words[::-1]))
print(f"   unigram: 'the children play chess .' {a:.3f}, reversed {b:.3f}")
ok(a == b, "a unigram model gives both orders the same score: a tie, counted wrong")

# %%
stage("Accuracy on 40 pairs a paradigm, beside the unigram baseline.")
tokenized = tokenize_pairs(tokenizer, [p for p in builtin_pairs(40)], config.max_position_embeddings)
scored = ScoredPairs(tokenized)
score_with_bert(scored, "bert", params, config, tokenizer, log=lambda *_: None)
score_with_counts(scored, unigram)
for row in scored.accuracies():
    if row.level in ("overall", "paradigm"):
        low, high = row.interval("bert")
        print(f"   {row.name:<42} BERT {100 * row.accuracy('bert'):5.1f} [{100 * low:4.1f}, {100 * high:5.1f}]"
              f"   unigram {100 * row.accuracy('unigram'):5.1f}")
ok(scored.accuracies()[0].pairs == 240, "240 pairs scored")

# %% [markdown]
# > from docs/linguistics.md: Attention heads

# %%
stage("What each attention head looks at, over 100 held-out sequences of its pretraining data.")
batches = heldout_batches(pretraining_data_of(os.path.join(run, "checkpoint")), tokenizer.ids_to_tokens, 100)
stats = head_statistics(params, config, batches, tokenizer)
means = stats.mean()                                                          # (L, A, 8)
print("   layer head " + " ".join(f"{t:>11}" for t in TARGETS) + "  entropy")
for i in range(config.num_hidden_layers):
    for h in range(config.num_attention_heads):
        print(f"   {i:5d} {h:4d} " + " ".join(f"{means[i, h, k]:11.2f}" for k in range(len(TARGETS)))
              + f"  {means[i, h, len(TARGETS)]:.2f}")
for layer, head, what in named_heads(means):
    print(f"   layer {layer} head {head}: {what}")
ok(((means[:, :, :len(TARGETS)] >= 0) & (means[:, :, :len(TARGETS)] <= 1 + 1e-9)).all(),
   "every share of attention is between 0 and 1")
plt = pyplot(args)
if plt is not None:
    show(plt, head_figure(plt, means[:, :, :len(STATISTICS)], list(STATISTICS), title="average attention"))
print("all checks passed")
