"""Pretraining: masked LM + next-sentence prediction on prepared instances (or masked LM alone,
no_nsp: the same instances, no NSP loss, the NSP head and the pooler never updated).

    for step in range(steps):
        batch = next batch of the epoch's permutation          (resumable: epoch, index)
        loss, cache = pretraining_forward(params, batch, dropout rng)
        grads = pretraining_backward(cache); clip to global norm 1
        AdamW step at the warmup + linear-decay learning rate

The run's lifecycle (out dir, lock, resume, saving, the stop message) is npbert/training/run.py
and the loop npbert/training/loop.py, both shared with fine-tuning; what is pretraining's own is
here (the recipe putting its options together) and in npbert/pretraining/: its options
(pretraining/pretrain_options.py, one declaration each), the data
(a prepared directory, or a corpus prepared into OUT/data), the model (a preset, or a checkpoint
with --model), and held-out MLM and NSP accuracy against their baselines.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import time
from dataclasses import dataclass

import numpy as np

from npbert.checkpoint import load_pretrained
from npbert.config import BertConfig
from npbert.data.instances import canonical_mask_mix
from npbert.errors import NpbertError
from npbert.model_params import NSP_ONLY_PARAMS, init_params
from npbert.option_declaration import check_ranges
from npbert.pretraining.corpus import (DATA_DIR, HELDOUT_SPLIT, SHORT_DATA_DIR, check_corpus,  # noqa: F401
                                       check_short_data, load_prepared, prepare_corpus, with_data_options)
from npbert.pretraining.evaluation import evaluate  # noqa: F401  (npbert.pretraining.recipe.evaluate, as documented)
from npbert.pretraining.from_checkpoint import (check_data_fits, checkpoint_options, dropout_options,
                                                start_from_checkpoint)
from npbert.pretraining.job import PretrainingJob
from npbert.pretraining.pretrain_options import (BUILTIN_RECIPE, DEFAULT_SHORT_SEQ_SHARE, DEFAULT_STEPS,
                                                 PretrainOptions, with_corpus_defaults)
from npbert.tokenizer import BertTokenizer
from npbert.training.budget import BudgetClock, plan_steps
from npbert.training.loop import Schedule, update
from npbert.training.progress import say
from npbert.training.run import Recipe, Started, run_training
from npbert.training.run_dir import CHECKPOINT_DIR, METRICS_FILE
from npbert.training.state import STATE_JSON, TrainingCheckpoint, start_training

PATHS = ("corpus", "data", "short_data", "vocab", "model")   # made absolute when a run starts (training/inputs.py)
BUDGET_PLAN = "budget_plan"                            # --budget's plan in the checkpoint's running state


# Options a resumed run may change: they decide what is logged, evaluated and saved, and when
# the run stops, not what it computes (npbert/training/training_options.py).
CHANGEABLE_ON_RESUME = ("out", "log_every", "eval_every", "eval_batches", "save_every", "stop_after")


def pretrain(opts: PretrainOptions, resume=False, overwrite=False, log=say, given=None) -> dict:
    """Run (or resume) pretraining; returns the final held-out metrics and where the model is.
    given: the options the user set (the CLI's typed flags); default, those that differ from
    PretrainOptions' defaults. Every input is checked before anything is written, and
    --overwrite keeps the earlier run until this one has saved (npbert/training/run.py)."""
    return run_training(PretrainingRecipe(), opts, resume, overwrite, log, given)


@dataclass
class PretrainingInputs:
    """What prepare() read, for start(): --model's checkpoint, and the prepared data (train,
    held-out), or None when start() prepares the corpus into OUT/data; the short instances' training
    split, or None (none, or start() prepares them into OUT/data-short)."""
    loaded: object | None                # --model's checkpoint (checkpoint.py's Pretrained)
    data: tuple | None
    short: object | None
    clock_start: float                   # time.monotonic() when the run began: --budget counts from here


class PretrainingRecipe(Recipe):
    """Pretraining in the shared lifecycle: prepare() loads --model and a prepared --data (or
    checks the corpus exists) and returns them, start() prepares the corpus into OUT/data and
    builds the model, finish() evaluates on the whole held-out split."""
    kind, changeable = "pretrain", CHANGEABLE_ON_RESUME

    def check(self, opts):
        check_options(opts)

    def paths(self, opts):
        return PATHS

    def prepare(self, opts, saved, log):
        clock_start = time.monotonic()
        if opts.steps is None and opts.budget is None:
            opts = dataclasses.replace(opts, steps=DEFAULT_STEPS)
        loaded = data = None
        if opts.model is not None and saved is None:
            loaded = load_pretrained(opts.model, strict=False)
            opts = checkpoint_options(opts, loaded)
        if opts.data is not None or saved is not None:
            data = load_prepared(self.data_dir(opts))
            opts = with_data_options(opts, data[0])
        else:
            check_corpus(opts.corpus)                  # read and prepared into OUT/data in start()
        if saved is None:                              # a resumed run has its options, defaults resolved then
            opts = with_corpus_defaults(opts, data[0].manifest["options"]["corpus"] if data else opts.corpus)
        short, short_dir = None, self.short_dir(opts)
        if short_dir is not None:
            if opts.short_seq_share is None:
                opts = dataclasses.replace(opts, short_seq_share=DEFAULT_SHORT_SEQ_SHARE)
            if data is not None and (opts.short_data or saved is not None):   # else prepared in start()
                short = load_prepared(short_dir)[0]
                check_short_data(short, data[0])
        if loaded is not None:
            note_learning_rate(opts, log)
        return opts, PretrainingInputs(loaded, data, short, clock_start)

    def data_dir(self, opts):
        return opts.data or os.path.join(opts.out, DATA_DIR)

    def short_dir(self, opts):
        """The short instances' directory (--short-data, or the corpus prepared into OUT/data-short),
        None without a short phase."""
        if opts.short_data is not None:
            return opts.short_data
        return os.path.join(opts.out, SHORT_DATA_DIR) if opts.short_seq_length is not None else None

    def inputs(self, opts):
        return [d for d in (self.data_dir(opts), self.short_dir(opts)) if d is not None]

    def start(self, opts, saved, prepared: PretrainingInputs, metrics, log):
        data, short = prepared.data, prepared.short
        if data is None:
            data = prepare_corpus(opts, log)
            opts = with_data_options(opts, data[0])
        if short is None and opts.short_seq_length is not None:
            short = prepare_corpus(opts, log, SHORT_DATA_DIR, max_seq_length=opts.short_seq_length,
                                   vocab=opts.vocab or data[0].vocab_file)[0]
            check_short_data(short, data[0])
        train_data, heldout_data = data
        ckpt = saved or new_checkpoint(opts, prepared.loaded, train_data, log)
        where = os.path.join(opts.out, CHECKPOINT_DIR) if saved else opts.model or f"the {opts.preset} preset"
        check_data_fits(ckpt.config, train_data, where)
        job = PretrainingJob(ckpt, train_data, heldout_data, opts, metrics, log, short)
        if opts.budget is not None:
            opts = job.opts = planned(opts, ckpt, job, prepared.clock_start, metrics, log)
        schedule = pretraining_schedule(opts)
        if heldout_data is not None and saved is None:
            metrics.write(kind="baseline", step=0, **job.baselines())
        c = ckpt.config
        log(f"pretraining {opts.model or opts.preset} ({c.num_hidden_layers} layers, hidden {c.hidden_size}, vocab "
            f"{c.vocab_size}) on {len(train_data):,} instances, {opts.steps} steps of {opts.batch_size}, peak lr "
            f"{opts.learning_rate:g}, warmup {schedule.warmup_steps}"
            + masked_lm_only(opts) + short_phase(job))
        # saved with the data's casing (its tokenizer_config.json), so that the checkpoint tokenizes as the data was
        tokenizer = BertTokenizer(train_data.vocab_file, do_lower_case=train_data.do_lower_case)
        return Started(ckpt, job, schedule, tokenizer)

    def before_save(self, ckpt, job):
        ckpt.extra["heldout_losses"] = job.watch.history
        if BUDGET_PLAN in ckpt.extra:
            ckpt.extra[BUDGET_PLAN]["spent_seconds"] = job.budget.spent()

    def finish(self, opts, started, metrics, log):
        return final_evaluation(opts, started.ckpt, started.job, metrics, log)


def final_evaluation(opts, ckpt, job, metrics, log) -> dict:
    """The whole held-out split scored once at the end, logged and written as a "final" record."""
    ckpt_dir, step = os.path.join(opts.out, CHECKPOINT_DIR), ckpt.position.step
    saved_line = f"model saved to {ckpt_dir}  (try: npbert fill-mask {ckpt_dir} \"... [MASK] ...\")"
    if job.heldout_data is None:
        log(f"no held-out documents (prepared with --heldout-fraction 0): no held-out evaluation; the training "
            f"figures are in {os.path.join(opts.out, METRICS_FILE)}")
        log(saved_line)
        return dict(step=step, checkpoint=ckpt_dir, stopped=False)
    final = evaluate(ckpt.params, ckpt.config, job.heldout_data, opts.batch_size, max_batches=None, nsp=job.nsp)
    metrics.write(kind="final", step=step, **final)
    pairs = f"on all {len(job.heldout_data):,} {job.unit}"
    log(f"held-out MLM accuracy {final['mlm_acc']:.3f} {pairs}  (most-frequent-token baseline "
        f"{job.mlm_baseline:.3f}{times_baseline(final['mlm_acc'], job.mlm_baseline)})")
    if job.nsp:
        log(f"held-out NSP accuracy {final['nsp_acc']:.3f} {pairs}  (majority-class baseline "
            f"{job.nsp_baseline:.3f}: {job.nsp_notnext:.0%} of the held-out pairs are NotNext)")
    else:
        log("no NSP accuracy: pretrained without next-sentence prediction (masked LM only); the NSP head and the pooler "
            "are as they were at step 0")
    log(saved_line)
    return dict(final, **{f"baseline_{k}": v for k, v in job.baselines().items()},
                step=step, checkpoint=ckpt_dir, stopped=False)


def masked_lm_only(opts) -> str:
    """What the start line says of NSP when it is off, and why (a flag, or the corpus's default)."""
    if not opts.no_nsp:
        return ""
    why = "single sentences have no next sentence" if opts.instances == "sentences" else "no NSP; --nsp turns it on"
    return f"; masked LM only ({why}): the NSP head and the pooler stay as they are"


def short_phase(job) -> str:
    """What the start line says of the short phase, if there is one."""
    if job.short_data is None:
        return ""
    n, data = job.short_steps(), job.short_data
    return (f"; steps 1 to {n:,} on {len(data):,} instances of up to {data.max_seq_length} tokens ({data.directory}), "
            f"the rest on {job.train_data.max_seq_length}")


def times_baseline(accuracy, baseline) -> str:
    """", 4.2x" the baseline; nothing when the baseline is 0 (the most frequent token never the
    answer, as with a --masked-lm-prob so small that one token an instance is masked): a ratio to 0
    is no figure, and one to a floor of 1e-9 read as "111111111.1x"."""
    return f", {accuracy / baseline:.1f}x" if baseline > 0 else ""


def note_learning_rate(opts, log) -> None:
    """--model starts a new optimizer and schedule: say which learning rate this run uses, and
    that it is not the checkpoint's (which a reader might expect to carry over)."""
    try:
        with open(os.path.join(opts.model, STATE_JSON), encoding="utf-8") as f:
            before = json.load(f)["options"]["learning_rate"]
    except (OSError, ValueError, KeyError, TypeError):
        before = None
    if before is not None and before != opts.learning_rate:
        log(f"learning rate {opts.learning_rate:g} (this run's --learning-rate), not the {before:g} {opts.model} was "
            "trained at: --model starts a new optimizer and schedule")


def new_checkpoint(opts, loaded, train_data, log) -> TrainingCheckpoint:
    """Step 0 of a new run: a preset's random model, or --model's."""
    if loaded is not None:
        config, params = start_from_checkpoint(opts, loaded, train_data, log)
    else:
        config = BertConfig.from_preset(opts.preset, **{
            "vocab_size": train_data.vocab_size, **dropout_options(opts), **(opts.model_overrides or {})})
        params = init_params(config, np.random.default_rng(opts.seed), np.float32)
    return start_training(config, params, opts, frozen=sorted(NSP_ONLY_PARAMS) if opts.no_nsp else ())


def planned(opts, ckpt, job, clock_start, metrics, log):
    """--budget: opts with the step count it plans (a new run: timed now, recorded in the
    checkpoint and the metrics; a resumed one: the count it recorded), and the job's progress
    line counting down the budget."""
    plan = ckpt.extra.get(BUDGET_PLAN)
    if plan is None:
        trial = copy.deepcopy(ckpt)                    # timed on a copy: the run's own first step is untouched
        step = lambda batch: update(job, trial, pretraining_schedule(dataclasses.replace(opts, steps=1)), batch)
        phases = [(share, lambda data=data: job.batches(0, 0, data)) for share, data in job.phases()]
        p = plan_steps(step, phases, job.overhead_seconds, opts.budget, clock_start)
        plan = ckpt.extra[BUDGET_PLAN] = dict(steps=p.steps, step_seconds=p.step_seconds,
                                              eval_seconds=p.eval_seconds, spent_seconds=p.spent_seconds)
        metrics.write(kind="budget", step=0, budget_minutes=opts.budget, **plan)
        log(p.describe(opts.budget) + f" (`--steps {p.steps}` instead of --budget remakes this run)")
    job.budget = BudgetClock(opts.budget, plan["spent_seconds"])
    return dataclasses.replace(opts, steps=plan["steps"])


def pretraining_schedule(opts: PretrainOptions) -> Schedule:
    """The run's learning rate at every step and its clipping norm (warmup: --warmup-steps, else
    --warmup-proportion of the steps; none recorded, as in runs started before that option, is the
    built-in recipe's share). tests/reference/continue_with_torch.py continues a run on PyTorch
    with this same schedule."""
    share = BUILTIN_RECIPE["warmup_proportion"] if opts.warmup_proportion is None else opts.warmup_proportion
    warmup = opts.warmup_steps if opts.warmup_steps is not None else int(share * opts.steps)
    return Schedule(opts.steps, warmup, opts.learning_rate, opts.max_grad_norm)


def check_options(opts) -> None:
    """Every option in its range (npbert/pretraining/pretrain_options.py), checked before
    anything is read or written, and the mask mix spelled as a mix."""
    check_ranges(opts)
    if opts.budget is not None and opts.steps is not None:
        raise NpbertError("--budget and --steps cannot both be given: --budget plans the step count (the run records "
                          "it; --steps N alone remakes that run)")
    if opts.instances == "sentences" and opts.no_nsp is False:
        raise NpbertError("--nsp with --instances sentences: single sentences have no next sentence to predict")
    if opts.warmup_steps is not None and opts.warmup_proportion is not None:
        raise NpbertError("--warmup-steps and --warmup-proportion cannot both be given: each sets the warm-up")
    if opts.mask_mix is not None:
        canonical_mask_mix(opts.mask_mix)              # a DataError naming it
    check_short_options(opts)


def check_short_options(opts) -> None:
    """The short phase's options agree: --short-data goes with --data, --short-seq-length with a
    corpus, and shorter than its --max-seq-length; --short-seq-share needs one of them."""
    if opts.short_data is not None and opts.data is None:
        raise NpbertError("--short-data goes with --data (prepared long instances); with --corpus, "
                          "--short-seq-length prepares the short ones")
    if opts.short_seq_length is not None and opts.data is not None:
        raise NpbertError("--short-seq-length prepares the corpus at that length, and --data is prepared already: "
                          "give the short instances as --short-data (`npbert prepare --max-seq-length N --vocab "
                          "DATA/vocab.txt`)")
    if opts.short_seq_share is not None and opts.short_data is None and opts.short_seq_length is None:
        raise NpbertError("--short-seq-share without short instances: give --short-seq-length (or --short-data)")
    if opts.short_seq_length is not None and opts.data is None:
        from npbert.data.prepare import resolved_max_seq_length
        long = resolved_max_seq_length(opts)
        if opts.short_seq_length >= long:
            raise NpbertError(f"--short-seq-length {opts.short_seq_length} is not shorter than --max-seq-length {long}"
                              f"{'' if opts.max_seq_length else ' (the default for this corpus)'}")
