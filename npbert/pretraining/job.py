"""The pretraining Job the shared loop runs (npbert/training/loop.py): masked LM + NSP on the
epoch's permutation of the prepared instances, with held-out evaluation as it goes. With short
instances (--short-seq-length), the first short_steps() steps read them and the rest the long
ones, each from its first epoch (the BERT paper's 128 then 512 tokens), the positions past the
short length copied from the first ones at the switch (--new-positions). The step runs
BertModel on the packed layout (npbert/layers/layout.py): padding not computed, the last layer
at the masked positions and [CLS]."""
from __future__ import annotations

import time

import numpy as np

from npbert.model import pretraining_backward, pretraining_forward
from npbert.pretraining.evaluation import evaluate, keep_nsp, most_frequent_token_accuracy, step_metrics
from npbert.training.loop import Job
from npbert.training.overfitting import RisingLossWatch


POSITIONS = "bert.embeddings.position_embeddings.weight"


def copy_positions(params, short: int, long: int) -> None:
    """Position embeddings short..long-1 set, in place, to copies of rows 0..short-1 (row i from
    row i mod short), as Longformer started the positions it added to RoBERTa's: the long phase
    begins with positions that already mean "k places after a start", not random vectors."""
    p = params[POSITIONS]                                   # (max_position_embeddings, H)
    rows = np.arange(short, long)                           # (long - short,)
    p[rows] = p[rows % short]


class PretrainingJob(Job):
    """Masked LM + NSP on prepared instances: the epoch's permutation of the training split,
    held-out evaluation every eval_every steps against the two baselines (none for data
    prepared with --heldout-fraction 0). With no_nsp, masked LM alone on the same batches: the
    NSP labels are left out (no NSP loss, so zero gradients for the NSP head and the pooler,
    which are frozen as well, so that weight decay does not shrink them either), and nothing
    reports an NSP accuracy."""

    def __init__(self, ckpt, train_data, heldout_data, opts, metrics, log, short_data=None):
        self.config, self.params, self.opts, self.metrics, self.log = ckpt.config, ckpt.params, opts, metrics, log
        self.train_data, self.heldout_data, self.short_data = train_data, heldout_data, short_data
        self.data = train_data                         # what batches() reads: the phase's (use_data_of)
        self.batches_per_epoch = train_data.num_batches(opts.batch_size)
        self.nsp = not opts.no_nsp
        self.unit = "sentences" if train_data.instances == "sentences" else "pairs"   # what an instance is
        if heldout_data is not None:
            self.mlm_baseline = most_frequent_token_accuracy(train_data, heldout_data)
            self.nsp_notnext = float(heldout_data.arrays["next_sentence_labels"].mean())
            self.nsp_baseline = max(self.nsp_notnext, 1.0 - self.nsp_notnext)
        self.watch = RisingLossWatch(ckpt.extra.get("heldout_losses"))
        self.budget = None                             # --budget: its BudgetClock (npbert/training/budget.py)

    def baselines(self) -> dict:
        """The held-out baselines the accuracies are measured against."""
        return keep_nsp(dict(mlm_acc=self.mlm_baseline, nsp_acc=self.nsp_baseline), self.nsp)

    def overhead_seconds(self) -> tuple:
        """(seconds of held-out evaluation a training step, on average; seconds of the final
        evaluation over the whole held-out split), from one evaluation timed now (--budget)."""
        if self.heldout_data is None:
            return 0.0, 0.0
        batches = min(max(self.opts.eval_batches, 1), self.heldout_data.num_batches(self.opts.batch_size))
        evaluate(self.params, self.config, self.heldout_data, self.opts.batch_size, 1, nsp=self.nsp)  # compiles
        t0 = time.perf_counter()
        evaluate(self.params, self.config, self.heldout_data, self.opts.batch_size, batches, nsp=self.nsp)
        one_batch = (time.perf_counter() - t0) / batches
        periodic = one_batch * self.opts.eval_batches / self.opts.eval_every if self.opts.eval_every else 0.0
        return periodic, one_batch * self.heldout_data.num_batches(self.opts.batch_size)

    def short_steps(self) -> int:
        """How many of the steps read the short instances (0 without them)."""
        return int(self.opts.short_seq_share * self.opts.steps) if self.short_data is not None else 0

    def phases(self) -> list:
        """[(share of the steps, data)] in the order they train: what --budget times."""
        if self.short_data is None:
            return [(1.0, self.train_data)]
        share = self.opts.short_seq_share
        return [(share, self.short_data), (1.0 - share, self.train_data)]

    def use_data_of(self, step):
        self.data = self.short_data if step < self.short_steps() else self.train_data
        self.batches_per_epoch = self.data.num_batches(self.opts.batch_size)

    def data_changes_after(self, step):
        return 0 < step == self.short_steps()

    def batches(self, epoch, start, data=None):
        return (self.data if data is None else data).batches(self.opts.batch_size, self.opts.seed, epoch, start)

    def forward(self, params, batch, rng):
        if not self.nsp:
            batch = dict(batch, nsp_labels=None)       # no label counted: NSP loss 0, its gradients 0
        return pretraining_forward(params, self.config, **batch, rng=rng, packed=True)

    def backward(self, cache):
        return pretraining_backward(cache)

    def step_metrics(self, out, batch):
        return keep_nsp(step_metrics(out), self.nsp)

    def describe(self, m, epoch):
        nsp = f"nsp acc {m['nsp_acc']:.3f}" if self.nsp else "nsp off"
        left = f" | {self.budget.left()}" if self.budget else ""
        return f"loss {m['loss']:.3f} | mlm acc {m['mlm_acc']:.3f} | {nsp}{left}"

    def after_step(self, position, epoch_ended, done):
        step = position.step
        if self.data_changes_after(step) and self.opts.new_positions == "copied":   # the long phase begins
            copy_positions(self.params, self.short_data.max_seq_length, self.train_data.max_seq_length)
        if self.heldout_data is None or not (done or (self.opts.eval_every and step % self.opts.eval_every == 0)):
            return
        e = evaluate(self.params, self.config, self.heldout_data, self.opts.batch_size, self.opts.eval_batches,
                     nsp=self.nsp)
        nsp_acc = f" | nsp acc {e['nsp_acc']:.3f} (baseline {self.nsp_baseline:.3f})" if self.nsp else ""
        nsp_loss = f" | nsp loss {e['nsp_loss']:.3f}" if self.nsp else ""
        shown = min(self.opts.eval_batches * self.opts.batch_size, len(self.heldout_data))
        self.log(f"  held-out ({shown:,} of {len(self.heldout_data):,} {self.unit}): mlm acc {e['mlm_acc']:.3f} (baseline "
                 f"{self.mlm_baseline:.3f}){nsp_acc} | mlm loss {e['mlm_loss']:.3f}{nsp_loss}")
        self.metrics.write(kind="eval", step=step, **e)
        warning = self.watch.add(step, e["mlm_loss"])
        if warning:
            passes = step * self.opts.batch_size / len(self.train_data)
            self.log(f"  warning: {warning}: {step} steps of {self.opts.batch_size} have gone through the "
                     f"{len(self.train_data):,} training instances {passes:.0f} times. More text, or fewer --steps.")
