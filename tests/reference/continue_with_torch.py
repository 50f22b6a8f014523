"""Continue an npbert pretraining run on PyTorch's distributed training (DDP on CPU, gloo), check
that it is the same run, and bring the result back to npbert.

    npbert prepare --out /tmp/bridge/data
    npbert pretrain --data /tmp/bridge/data --out /tmp/bridge/run --steps 1200 --stop-after 600
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 torchrun --nproc_per_node 2 \\
        tests/reference/continue_with_torch.py /tmp/bridge/run --out /tmp/bridge/torch

RUN is an npbert run directory: RUN/checkpoint, a training checkpoint (weights, AdamW moments and
step count, data position, the run's options), and the prepared data it trained on (the run's
--data, else RUN/data; --data to say). On several machines, the same command on each with
`--nnodes N --node_rank I --master_addr HOST --master_port PORT` (docs/scaling.md).

- Model: transformers' BertForPreTraining, loaded from RUN/checkpoint; the MLM head runs at the
  masked positions only (as npbert and the original BERT), not at all B*T.
- Data: the shards, read by docs/data.md's NumPy reader (tests/support/shard_reader_doc.py runs it from
  the page), in npbert's order from the checkpoint's (epoch, batch) on. Each global batch (the
  run's batch size) is cut into world_size contiguous pieces, one per rank, so the ranks see
  disjoint instances and together exactly npbert's batches. A rank's loss is its share of the
  global loss (its sums over the global counts of masked tokens and of rows), times world_size
  because DDP averages gradients: the gradient is that of npbert's loss on the whole batch.
- Optimizer: torch.optim.AdamW, betas 0.9/0.999, eps 1e-6, weight decay where npbert.optim.decays
  says, with npbert's moments m, v and step count carried into its state (they are the same
  quantities: npbert's update is torch's, docs/pretraining.md); the learning rate of the run's
  own schedule at each step (npbert.pretraining.recipe.pretraining_schedule), gradients clipped to its
  global norm. Dropout is the checkpoint's.

Checks, printed as PASS/FAIL lines with their figures (exit 1 if one fails):
  1. the loss on the first batch (dropout off) equals npbert's pretraining_forward on npbert's own batch;
  2. after the first update, the weights equal those of npbert's own update on that batch
     (npbert.training.loop.update; only when the run has no dropout: the two draw different masks);
  3. the ranks trained on disjoint instances, together exactly npbert's batches;
  4. the result, saved with transformers' save_pretrained plus vocab.txt, opens in
     npbert.load_pretrained with torch's weights bit for bit, has a lower held-out MLM loss than
     the checkpoint it started from (npbert's own evaluation), and `npbert fill-mask` and
     `npbert finetune --model` run on it.
Needs torch and transformers (reference scripts only; npbert and its tests do not).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
import types

os.environ["HF_HUB_OFFLINE"] = "1"                  # local files only, never the hub
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.dirname(HERE)]         # this checkout's npbert; tests/support/shard_reader_doc.py

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import transformers  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from npbert.checkpoint import load_pretrained  # noqa: E402
from npbert.data.pretraining_data import PretrainingData  # noqa: E402
from npbert.atomic import check_dir_path  # noqa: E402
from npbert.errors import NpbertError  # noqa: E402
from npbert.model import pretraining_backward, pretraining_forward  # noqa: E402
from npbert.optim import decays  # noqa: E402
from npbert.pretraining.recipe import HELDOUT_SPLIT, PretrainOptions, evaluate, pretraining_schedule  # noqa: E402
from npbert.tokenizer import load_vocab  # noqa: E402
from npbert.training.loop import update  # noqa: E402
from npbert.training.state import load_training_checkpoint  # noqa: E402
from support.shard_reader_doc import load_reader  # noqa: E402

# float32, two implementations of one model: matmuls, softmax and LayerNorm sum in other orders, so
# logits differ by a few 1e-6 (docs/checkpoints.md: 4.1e-6 on a real checkpoint); a mean
# cross-entropy of ~4 inherits that, a relative 1e-5 is ~20 float32 ulps of it.
LOSS_TOLERANCE = 1e-5
# One AdamW step from carried moments: the gradients agree to a relative ~1e-6, which moves an
# update of size ~lr by ~lr * 1e-6 (~2e-9), far below the rounding of the weights themselves:
# one float32 ulp is 6e-8 to 1.2e-7 for |w| in [0.5, 2]. So a few ulps (measured: 6e-8, one ulp),
# while a wrong moment, bias correction, weight decay or learning rate moves some weight by 1e-6
# or more (decay alone: lr * 0.01 * |w|).
UPDATE_TOLERANCE = 3e-7
# ...except the attention key biases: their gradient is 0 in exact arithmetic (softmax ignores a
# constant added to a row of scores; docs/porting.md), so both sides hold rounding noise of ~1e-9
# and Adam turns it into steps of up to ~lr * |noise| / eps: they are held to the learning rate.
NOISE_ONLY = ".attention.self.key.bias"
FILL_MASK_TEXT = "every morning , ella goes to the [MASK] ."
FINETUNE = ["--task", "builtin-sentence"]                  # its defaults: 3 epochs, about a minute


class MaskedPretraining(torch.nn.Module):
    """BertForPreTraining's modules with the MLM head at the masked positions only -> this rank's sums."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, token_type_ids, attention_mask, masked_lm_positions, masked_lm_labels,
                next_sentence_label):
        bert, cls = self.model.bert, self.model.cls
        hidden, pooled = bert(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                              return_dict=False)[:2]                           # (B, T, H), (B, H)
        used = masked_lm_labels != -100                                        # (B, P)
        rows = torch.arange(len(used))[:, None].expand_as(used)[used]          # (N,)
        mlm_logits = cls.predictions(hidden[rows, masked_lm_positions[used]])  # (N, V)
        nsp_logits = cls.seq_relationship(pooled)                              # (B, 2)
        labels = masked_lm_labels[used]                                        # (N,)
        return torch.stack([F.cross_entropy(mlm_logits, labels, reduction="sum"),
                            F.cross_entropy(nsp_logits, next_sentence_label, reduction="sum"),
                            (mlm_logits.argmax(-1) == labels).sum().float(),
                            (nsp_logits.argmax(-1) == next_sentence_label).sum().float()])


PER_TOKEN = ("input_ids", "token_type_ids", "attention_mask")                   # (B, L) arrays


def torch_inputs(reader, arrays, rows) -> dict:
    """docs/data.md's model_inputs, cut to the longest row (padding beyond it changes nothing but time)."""
    inputs = reader["model_inputs"](arrays, rows)
    T = int(inputs["attention_mask"].sum(1).max())
    return {k: torch.from_numpy(v[:, :T] if k in PER_TOKEN else v) for k, v in inputs.items()}


def counts(arrays, rows) -> torch.Tensor:
    """[masked tokens, rows, real tokens] of some rows of the split."""
    return torch.tensor([arrays["num_masked"][rows].sum(), len(rows), arrays["lengths"][rows].sum()],
                        dtype=torch.float64)


def loss_share(sums, masked, batch) -> torch.Tensor:
    """This rank's part of the global loss = mean MLM CE over all masked tokens + mean NSP CE over all rows."""
    return sums[0] / masked + sums[1] / batch


def adamw_from_npbert(model, npbert_optimizer, weight_decay) -> torch.optim.AdamW:
    """torch's AdamW in npbert's settings, npbert's moments and step count in its state."""
    named = list(model.named_parameters())
    groups = [{"params": [p for n, p in named if decays(n)], "weight_decay": weight_decay},
              {"params": [p for n, p in named if not decays(n)], "weight_decay": 0.0}]
    b1, b2 = npbert_optimizer.betas
    optimizer = torch.optim.AdamW(groups, lr=0.0, betas=(b1, b2), eps=npbert_optimizer.eps)
    for name, p in named:
        optimizer.state[p] = {"step": torch.tensor(float(npbert_optimizer.t)),
                              "exp_avg": torch.tensor(npbert_optimizer.m[name]),       # copies
                              "exp_avg_sq": torch.tensor(npbert_optimizer.v[name])}
    return optimizer


def check_line(ok, what, figures) -> bool:
    print(f"{'PASS' if ok else 'FAIL'}  {what}: {figures}", flush=True)
    return ok


def max_weight_difference(model, params, which=lambda name: True) -> float:
    return max(float(np.abs(p.detach().numpy() - params[n]).max()) for n, p in model.named_parameters() if which(n))


def npbert_command(*argv) -> subprocess.CompletedProcess:
    """`npbert ...` of this checkout, one BLAS thread."""
    env = dict(os.environ, PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "npbert.cli", *argv], capture_output=True, text=True, env=env)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", help="an npbert pretraining run directory (RUN/checkpoint)")
    p.add_argument("--data", help="the prepared data it trained on (default: the run's --data, else RUN/data)")
    p.add_argument("--out", required=True, help="a new or empty directory for the continued model (Hugging Face's "
                                                "format)")
    p.add_argument("--steps", type=int, help="stop at this step (default: the end of the run's schedule)")
    p.add_argument("--log-every", type=int, default=100)
    args = p.parse_args(argv)
    check_dir_path(args.out)                           # before anything runs: a file in the way, or ...
    if os.path.isdir(args.out) and os.listdir(args.out):   # ... something of the user's, is never overwritten
        raise NpbertError(f"--out {args.out} is not empty: give a new or empty directory")

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    say = print if rank == 0 else (lambda *a, **k: None)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()

    ckpt_dir = os.path.join(args.run, "checkpoint")
    ckpt = load_training_checkpoint(ckpt_dir)          # npbert's: weights, AdamW m, v, t, position, options
    opts = PretrainOptions(**ckpt.options)
    schedule = pretraining_schedule(opts)
    data_dir = args.data or opts.data or os.path.join(args.run, "data")
    start, stop, B = ckpt.position.step, args.steps or schedule.total_steps, opts.batch_size
    if load_vocab(os.path.join(data_dir, "vocab.txt")) != load_vocab(os.path.join(ckpt_dir, "vocab.txt")):
        raise NpbertError(f"{data_dir} was prepared with another vocabulary than {ckpt_dir}'s")
    if not start < stop <= schedule.total_steps or B < world:
        raise NpbertError(f"nothing to continue: the run is at step {start} of {schedule.total_steps}, asked to "
                         f"stop at {stop}, batch size {B} on {world} ranks")

    reader = load_reader()
    arrays = reader["read_split"](data_dir)            # docs/data.md's reader: NumPy alone
    n = len(arrays["lengths"])
    model = transformers.BertForPreTraining.from_pretrained(ckpt_dir, dtype=torch.float32, local_files_only=True)
    net = DistributedDataParallel(MaskedPretraining(model))
    optimizer = adamw_from_npbert(model, ckpt.optimizer, opts.weight_decay)
    dropout = model.config.hidden_dropout_prob or model.config.attention_probs_dropout_prob
    reference = NpbertReference(ckpt, data_dir, schedule) if rank == 0 else None
    say(f"continuing {ckpt_dir} at step {start} of {schedule.total_steps} (epoch {ckpt.position.epoch}, batch "
        f"{ckpt.position.batch}) on {world} ranks to step {stop}: {n:,} instances of {data_dir}, batch {B} "
        f"({B // world} a rank), lr {schedule.lr(start):.3g}, AdamW moments carried (t = {ckpt.optimizer.t})")

    seen, ok, line, seconds, tokens = [], True, torch.zeros(7, dtype=torch.float64), 0.0, 0.0
    batches = npbert_order(reader, n, opts.seed, B, ckpt.position.epoch, ckpt.position.batch)
    for step, (epoch, k, rows) in zip(range(start, stop), batches):
        mine = np.array_split(rows, world)[rank]                               # this rank's piece of it
        seen.append((epoch, k, mine))
        masked, count, batch_tokens = counts(arrays, rows).tolist()
        inputs = torch_inputs(reader, arrays, mine)
        if step == start:
            ok &= check_first_loss(net, inputs, masked, count, reference)
        t0 = time.perf_counter()
        loss, sums, norm = train_step(net, optimizer, inputs, masked, count, schedule, step, world)
        seconds, tokens = seconds + time.perf_counter() - t0, tokens + batch_tokens
        if step == start and reference is not None:
            ok &= reference.check_first_update(model, dropout)
        line += torch.cat([torch.tensor([1.0 / world]), loss[None], sums[2:], counts(arrays, mine)])
        if (step + 1) % args.log_every == 0 or step + 1 == stop:
            dist.all_reduce(line)                      # sums over the ranks: steps, loss, hits, counts
            steps, loss_sum, mlm_hits, nsp_hits, n_masked, n_rows = line[:6].tolist()
            say(f"step {step + 1:>5}/{schedule.total_steps} | loss {loss_sum / steps:.3f} | mlm acc "
                f"{mlm_hits / n_masked:.3f} | nsp acc {nsp_hits / n_rows:.3f} | lr {schedule.lr(step):.2e} | "
                f"grad norm {norm:.2f} | {tokens / seconds:,.0f} tok/s")
            line.zero_()
    gathered = [None] * world
    dist.all_gather_object(gathered, seen)
    dist.destroy_process_group()
    if rank != 0:
        return 0
    say(f"{stop - start} steps of {B} in {seconds:.1f} s on {world} ranks ({seconds / (stop - start) * 1e3:.0f} ms a "
        f"step, {tokens / seconds:,.0f} tokens/s)")
    ok &= reference.check_disjoint(gathered)
    ok &= come_back(model, ckpt_dir, args.out, reference)
    print("all checks passed" if ok else "SOME CHECKS FAILED", flush=True)
    return 0 if ok else 1


def npbert_order(reader, n, seed, B, epoch, k):
    """npbert's global batches from (epoch, k) on, for ever: (epoch, k, rows)."""
    while True:
        order = reader["epoch_order"](n, seed, epoch)
        for k in range(k, -(-n // B)):
            yield epoch, k, order[k * B:(k + 1) * B]
        epoch, k = epoch + 1, 0


def train_step(net, optimizer, inputs, masked, count, schedule, step, world):
    """One DDP step on this rank's piece of a global batch -> (loss share, sums, gradient norm before clipping)."""
    net.train()
    sums = net(**inputs)
    loss = loss_share(sums, masked, count)
    optimizer.zero_grad(set_to_none=True)
    (loss * world).backward()                          # DDP averages over the ranks: the global loss's gradient
    norm = torch.nn.utils.clip_grad_norm_(net.parameters(), schedule.max_grad_norm)
    for group in optimizer.param_groups:
        group["lr"] = schedule.lr(step)
    optimizer.step()
    return loss.detach(), sums.detach(), float(norm)


def check_first_loss(net, inputs, masked, count, reference) -> bool:
    """Check 1: the global loss of the first batch, dropout off, against npbert's on its own batch."""
    net.eval()
    with torch.no_grad():
        loss = loss_share(net(**inputs), masked, count)
    dist.all_reduce(loss)                              # every rank's share: the global loss
    if reference is None:
        return True
    ours = float(reference.first_loss())
    diff = abs(float(loss) - ours) / abs(ours)
    return check_line(diff <= LOSS_TOLERANCE, "1. first batch's loss = npbert's",
                      f"torch DDP {float(loss):.9g}, npbert {ours:.9g}, relative difference {diff:.1e} "
                      f"(tolerance {LOSS_TOLERANCE:g})")


class NpbertReference:
    """npbert's side of the checks (rank 0): the run's checkpoint, its data read by npbert's own
    reader, and the batch the run takes next."""

    def __init__(self, ckpt, data_dir, schedule):
        self.ckpt, self.schedule, self.data_dir = ckpt, schedule, data_dir
        self.data = PretrainingData(data_dir)
        o, position = ckpt.options, ckpt.position
        self.batch_size, self.seed = o["batch_size"], o["seed"]
        self.batch = next(self.data.batches(self.batch_size, self.seed, position.epoch, position.batch))

    def first_loss(self) -> float:
        return pretraining_forward(self.ckpt.params, self.ckpt.config, **self.batch, rng=None)[0]["loss"]

    def check_first_update(self, model, dropout) -> bool:
        """Check 2: torch's weights after the first step against npbert's own update of the checkpoint."""
        if dropout:
            print(f"SKIP  2. first update = npbert's: the run has dropout {dropout:g}, torch draws other masks")
            return True
        ckpt = self.ckpt
        job = types.SimpleNamespace(backward=pretraining_backward, forward=lambda params, batch, rng:
                                    pretraining_forward(params, ckpt.config, **batch, rng=rng))  # what update calls
        before = {name: a.copy() for name, a in ckpt.params.items()}
        update(job, ckpt, self.schedule, self.batch)   # npbert's own step, in place on ckpt.params
        moved = max(float(np.abs(ckpt.params[name] - a).max()) for name, a in before.items())
        lr = self.schedule.lr(ckpt.position.step)
        diff = {noise: max_weight_difference(model, ckpt.params, lambda name: name.endswith(NOISE_ONLY) == noise)
                for noise in (False, True)}
        return check_line(diff[False] <= UPDATE_TOLERANCE and diff[True] <= lr, "2. first update = npbert's own",
                          f"weights differ by at most {diff[False]:.1e} (tolerance {UPDATE_TOLERANCE:g}; the key "
                          f"biases, whose gradient is rounding noise: {diff[True]:.1e}, tolerance lr {lr:.3g}) after "
                          f"an update that moved them by up to {moved:.1e}")

    def check_disjoint(self, gathered) -> bool:
        """Check 3: no instance went to two ranks, and the ranks' rows of each step, put back together,
        are npbert's batch of that step (its order, from npbert's reader)."""
        B, orders = self.batch_size, {}
        exact = True
        for pieces in zip(*gathered):                  # one step: (epoch, k, rows) of every rank
            epoch, k = pieces[0][:2]
            order = orders.setdefault(epoch, self.data.order(self.seed, epoch))
            exact &= np.array_equal(np.concatenate([rows for _, _, rows in pieces]), order[k * B:(k + 1) * B])
        per_rank = [{(epoch, int(r)) for epoch, _, rows in steps for r in rows} for steps in gathered]
        shared = sum(map(len, per_rank)) - len(set().union(*per_rank))
        return check_line(shared == 0 and exact, "3. the ranks see disjoint instances",
                          ", ".join(f"rank {i}: {len(s):,}" for i, s in enumerate(per_rank))
                          + f" instances in {len(gathered[0])} steps, {shared} on more than one rank; together "
                          + ("exactly npbert's batches" if exact else "NOT npbert's batches"))

    def heldout(self, params) -> dict:
        return evaluate(params, self.ckpt.config, PretrainingData(self.data_dir, HELDOUT_SPLIT), self.batch_size)


def come_back(model, ckpt_dir, out, reference) -> bool:
    """Check 4: save a Hugging Face directory; npbert opens and evaluates it, fill-mask and finetune run on it."""
    model.save_pretrained(out)
    for name in ("vocab.txt", "tokenizer_config.json"):   # the tokenizer the data was made with
        if os.path.exists(os.path.join(ckpt_dir, name)):
            shutil.copy(os.path.join(ckpt_dir, name), out)
    loaded = load_pretrained(out)
    same = set(loaded.params) == {name for name, _ in model.named_parameters()}
    diff = max_weight_difference(model, loaded.params) if same else float("inf")
    ok = check_line(same and diff == 0.0, "4a. npbert.load_pretrained reads the saved model",
                    f"{len(loaded.params)} tensors, max difference from torch's weights {diff:g}")
    before, after = reference.heldout(load_pretrained(ckpt_dir).params), reference.heldout(loaded.params)
    ok &= check_line(after["mlm_loss"] < before["mlm_loss"], "4b. held-out loss fell (npbert's evaluate)",
                     f"MLM loss {before['mlm_loss']:.3f} -> {after['mlm_loss']:.3f}, MLM acc {before['mlm_acc']:.3f}"
                     f" -> {after['mlm_acc']:.3f}, NSP acc {before['nsp_acc']:.3f} -> {after['nsp_acc']:.3f}")
    r = npbert_command("fill-mask", out, FILL_MASK_TEXT)
    guesses = [line.strip() for line in r.stdout.splitlines() if "[MASK] 1:" in line]
    ok &= check_line(r.returncode == 0 and len(guesses) == 1, f"4c. npbert fill-mask OUT {FILL_MASK_TEXT!r}",
                     guesses[0] if guesses else (r.stderr or r.stdout)[-300:])
    t0 = time.perf_counter()
    r = npbert_command("finetune", "--model", out, "--out", out.rstrip("/") + "-finetune", "--overwrite", *FINETUNE)
    last = [line.strip() for line in r.stdout.splitlines() if line.strip()][-2:]
    ok &= check_line(r.returncode == 0, f"4d. npbert finetune --model OUT {' '.join(FINETUNE)}",
                     f"{time.perf_counter() - t0:.0f} s: " + (" / ".join(last) if r.returncode == 0
                                                               else r.stderr[-300:]))
    return ok


if __name__ == "__main__":
    try:
        sys.exit(main())
    except NpbertError as e:                           # a run, checkpoint or data npbert cannot use: one line
        sys.exit(f"continue_with_torch.py: error: {e}")
