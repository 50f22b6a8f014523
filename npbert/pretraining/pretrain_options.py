"""The options of `npbert pretrain`, declared once (npbert/option_declaration.py), in the order
--help lists them: the run directory and data, the corpus options shared with `npbert prepare`
(npbert/data/prepare_options.py), the model, the schedule and optimizer, evaluation and the run
controls (npbert/training/training_options.py)."""
from __future__ import annotations

import dataclasses
import math

from npbert.config import PRESETS
from npbert.data.prepare_options import CORPUS_OPTIONS
from npbert.option_declaration import COUNT, POSITIVE, PROBABILITY, Interval, Option, options_record
from npbert.training.training_options import dropout_options, optimizer_options, run_options

# The default run's recipe, chosen over seeds (benchmarks/default_run_seeds.py, docs/pretraining.md):
# at 1200 steps the held-out MLM accuracy depended on the seed (0.23 to 0.56: each run sat on a
# plateau near 0.2 until a seed-dependent step); 2000 steps take every seed past it.
DEFAULT_STEPS = 2000
DEFAULT_SHORT_SEQ_SHARE = 0.9            # the BERT paper's 90 % of the steps at the shorter length

# The defaults that depend on the corpus (None in the declarations below, filled in when the run
# starts): the built-in stories keep the default run's recipe (docs/pretraining.md, "Measured
# runs"); any other corpus gets the hour recipe (docs/hour_recipe.md, measured on IMDB).
BUILTIN_RECIPE = dict(learning_rate=2e-3, warmup_proportion=0.25, instances="pairs", no_nsp=False,
                      short_seq_length=None)
CORPUS_RECIPE = dict(learning_rate=1e-3, warmup_proportion=0.06, instances="pairs", no_nsp=True,
                     short_seq_length=64)         # a corpus prepared by the run itself (not --data)

PRETRAIN_OPTIONS = (
    Option("out", "runs/pretrain", "run directory; when not given and it holds a run, the next free one "
                                   "(runs/pretrain-2, ...)"),
    Option("data", None, "a directory made by `npbert prepare`, instead of --corpus (default: --corpus prepared "
                         "into OUT/data)"),
    *CORPUS_OPTIONS,
    # The BERT paper's two phases (90 % of the steps at 128 tokens, then 512): a short step costs
    # about half a long one, and the positions past the short length are learnt in the last phase.
    Option("short_seq_length", None, "train the first --short-seq-share of the steps on instances of at most N "
                                     "tokens, prepared from the same corpus and vocabulary into OUT/data-short, "
                                     "then the rest on --max-seq-length, one learning-rate schedule over both "
                                     f"(default: {CORPUS_RECIPE['short_seq_length']} for a corpus other than the "
                                     "built-in one when --max-seq-length is longer, else none; with --data, "
                                     "--short-data)", POSITIVE),
    Option("short_data", None, "with --data: a directory made by `npbert prepare` with the same vocabulary and a "
                               "smaller --max-seq-length, for the first --short-seq-share of the steps (default: "
                               "none)"),
    Option("short_seq_share", None, "share of the steps on the short instances (default: "
                                    f"{DEFAULT_SHORT_SEQ_SHARE:g} when there are short instances)",
           Interval(0, 1, low_open=True, high_open=True)),
    # At the switch the positions past the short length have never been trained; learning them
    # from their random start in the last tenth, at the end of the decay, left the hour's model
    # below the one trained at 128 throughout (docs/hour_recipe.md); copies of the first ones
    # (Longformer's start for new positions) are where it begins instead.
    Option("new_positions", "copied", "where the position embeddings past the short length start when the long "
                                      "phase begins: copied = row i from row i mod the short length (Longformer's "
                                      "start for new positions), random = as initialized (they were never trained)",
           choices=("copied", "random")),
    Option("preset", "tiny", "size of a new model (`npbert info PRESET` shows it)", choices=tuple(PRESETS)),
    # --model: its architecture and weights (instead of preset), a new optimizer and schedule;
    # for a corpus, its vocab.txt and casing
    Option("model", None, "a checkpoint (npbert or Hugging Face) to pretrain further instead of a new --preset "
                          "model: its weights and vocabulary, a new optimizer and learning-rate schedule (default: "
                          "none)"),
    Option("steps", None, f"training steps (batches) (default: {DEFAULT_STEPS}, or what --budget plans)", POSITIVE),
    Option("budget", None, "minutes of wall time the run may take at the threads it has, preparation included: the "
                           "step count is planned from a few timed steps at the start and recorded in the run (the "
                           "same options with --steps N remake the model), and the learning rate decays to 0 at the "
                           "last step (default: none, --steps)", Interval(0, math.inf, low_open=True),
           metavar="MINUTES"),
    Option("no_nsp", None, "masked LM only (the BERT paper's \"No NSP\"): the same sentence-pair instances and "
                           "batches, no next-sentence loss; the NSP head and the pooler are kept but never updated "
                           "(default: NSP on the built-in corpus, masked LM only on any other and on single "
                           "sentences; --nsp turns it on)", action="store_true", opposite="--nsp"),
    *optimizer_options(None, f" (default: {BUILTIN_RECIPE['learning_rate']:g} on the built-in corpus, "
                             f"{CORPUS_RECIPE['learning_rate']:g} on any other)"),
    Option("warmup_steps", None, "steps over which the learning rate rises from 0 (default: --warmup-proportion of "
                                 "the steps)", COUNT),
    Option("warmup_proportion", None, "share of the steps over which the learning rate rises from 0, instead of "
                                      f"--warmup-steps (default: {BUILTIN_RECIPE['warmup_proportion']:g} on the "
                                      f"built-in corpus, {CORPUS_RECIPE['warmup_proportion']:g} on any other)",
           PROBABILITY),
    # No dropout by default: a run this short underfits, and dropout only slows it down (on the
    # earlier builtin corpus, 1200 steps: held-out MLM accuracy 0.40 without, 0.25 at step
    # 1000 with 0.1; docs/pretraining.md). Pass 0.1 for BERT's own setting in long runs.
    *dropout_options(0.0),
    Option("eval_every", 100, "evaluate on the held-out data every N steps", COUNT),
    Option("eval_batches", 20, "held-out batches per evaluation", COUNT),
    *run_options(log_every=50, save_every_help="save a resumable checkpoint every N steps"),
    # BertConfig fields to change from the preset (e.g. a smaller test model)
    Option("model_overrides", None, "BertConfig fields to change from the preset", command_line=False),
)

PretrainOptions = options_record("PretrainOptions", PRETRAIN_OPTIONS, __name__)


def with_corpus_defaults(opts, corpus: str):
    """opts with the defaults of its corpus (BUILTIN_RECIPE or CORPUS_RECIPE) where they are None
    (single sentences, having no next sentence, train masked LM only)."""
    recipe = dict(BUILTIN_RECIPE if corpus == "builtin" else CORPUS_RECIPE)
    if opts.instances == "sentences" or recipe["instances"] == "sentences" and opts.instances is None:
        recipe["no_nsp"] = True
    fill = {k: v for k, v in recipe.items() if getattr(opts, k) is None}
    if opts.warmup_steps is not None:                  # a count given: no share to fill in
        fill.pop("warmup_proportion", None)
    if not short_phase_applies(opts, fill.get("short_seq_length")):
        fill.pop("short_seq_length", None)
    return dataclasses.replace(opts, **fill)


def short_phase_applies(opts, length) -> bool:
    """Whether the recipe's short phase fits the run: a corpus it prepares itself (with --data the
    short instances are --short-data), sequences longer than the short ones, none given already."""
    from npbert.data.prepare import resolved_max_seq_length
    return (length is not None and opts.data is None and opts.short_data is None
            and resolved_max_seq_length(opts) > length)
