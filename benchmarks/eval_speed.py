"""The evaluations inside the commands, timed two ways: the padded training forward (rng=None: no dropout, but caches kept and padding
computed) against npbert.inference (packed, no caches), both called in this one run.

    python benchmarks/eval_speed.py --checkpoint runs/rt/best      # a: `npbert evaluate` on rt-polarity dev
    python benchmarks/eval_speed.py --data runs/pretrain/data      # b: pretraining's held-out evaluation
    python benchmarks/eval_speed.py --checkpoint DIR --data DIR --rounds 7

a. The model part of `npbert evaluate --task TASK --checkpoint DIR` (default: rt-polarity's dev
   split): npbert.finetuning.evaluation.run_model over the encoded examples (what `predict` and the
   fine-tuning run's dev/test evaluations run too), with the padded forward, then the packed
   one; loading, reading and encoding, the same for both, are timed once beside them.
b. npbert.pretraining.evaluation.evaluate over the whole held-out split of a prepared
   directory (default: the built-in corpus prepared with `npbert pretrain`'s defaults, into a
   temporary directory), on a random model of the default preset (tiny): the run's final
   evaluation (the periodic one reads --eval-batches 20 of its batches).

On each backend (--backends), one thread everywhere, CPU time of this thread (time.thread_time: the time other processes
take on a shared machine is not counted), the two paths alternating round by round. Prints
each path's mean +- standard deviation (and min) over the rounds, the ratio of the means, and
both paths' metrics (equal up to float rounding).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NPBERT_NUM_THREADS"):
    os.environ[_var] = "1"
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # this checkout's npbert

import numpy as np  # noqa: E402


def compare(name, paths: dict, args) -> None:
    """paths: label -> a call; on each backend they alternate round by round, each timed by CPU time."""
    from npbert.backend import use_backend
    for backend in args.backends.split(","):
        with use_backend(backend):
            compare_on(f"{name}, {backend} backend", paths, args.rounds)


def compare_on(name, paths: dict, rounds) -> None:
    results, times = {}, {label: [] for label in paths}
    for label, fn in paths.items():
        results[label] = fn()                          # warm-up: the kernels compiled, caches filled
    for _ in range(rounds):
        for label, fn in paths.items():
            t0 = time.thread_time()
            fn()
            times[label].append(time.thread_time() - t0)
    means = {label: statistics.mean(t) for label, t in times.items()}
    print(f"{name} ({rounds} rounds, CPU s of one thread):")
    for label, t in times.items():
        spread = statistics.stdev(t) if len(t) > 1 else 0.0
        print(f"  {label:8s} {means[label]:8.3f} +- {spread:.3f} s (min {min(t):.3f})   {results[label]}")
    before, after = means.values()
    print(f"  before / after: {before / after:.2f}x")


def finetuned_evaluation(args) -> None:
    from npbert.finetuning.evaluation import check_max_length, load_finetuned, run_model
    from npbert.tasks.registry import get_task, read_examples
    from npbert.heads.task_model import task_model_forward

    def padded(head, params, config, **batch):
        return task_model_forward(head, params, config, **batch, rng=None)[0]

    def prepare():
        task = get_task(args.task)
        config, params, tokenizer, labels = load_finetuned(args.checkpoint, task)
        max_len = task.max_seq_length
        check_max_length(config, max_len)
        examples = read_examples(task, args.split)
        return task, config, params, tokenizer, labels, task.format.encode(examples, tokenizer, max_len, labels)
    t0 = time.thread_time()
    task, config, params, tokenizer, labels, encoded = prepare()
    print(f"a. npbert evaluate --task {args.task} --checkpoint {args.checkpoint}: {len(encoded.features)} "
          f"sequences, batches of {args.batch_size}; loading, reading and encoding "
          f"{time.thread_time() - t0:.3f} s (CPU)")

    def run(forward):
        outputs, loss = run_model(params, config, task.head, encoded.features, args.batch_size,
                                  tokenizer.pad_token_id, forward)
        return f"loss {loss:.6f}, first logits {np.round(outputs[0], 5).tolist()}"
    from npbert.inference import task_inference
    compare("   run_model", {"padded": lambda: run(padded), "packed": lambda: run(task_inference)}, args)


def heldout_evaluation(args) -> None:
    from npbert.pretraining.recipe import PretrainOptions
    opts = PretrainOptions()
    if args.data:
        return heldout_evaluation_on(args.data, opts, args)
    with tempfile.TemporaryDirectory(prefix="npbert-eval-speed-") as tmp:   # the built-in corpus, as `npbert pretrain`
        from npbert.data.prepare import PrepareOptions, corpus_options, prepare
        data = os.path.join(tmp, "data")
        prepare(PrepareOptions(**corpus_options(opts), out=data, seed=opts.seed), log=lambda *a, **k: None)
        heldout_evaluation_on(data, opts, args)


def heldout_evaluation_on(data, opts, args) -> None:
    from npbert.config import BertConfig
    from npbert.model import pretraining_forward
    from npbert.model_params import init_params
    from npbert.pretraining.corpus import load_prepared
    from npbert.pretraining.evaluation import evaluate

    train, heldout = load_prepared(data)
    config = BertConfig.from_preset(opts.preset, vocab_size=train.vocab_size)
    params = init_params(config, np.random.default_rng(0), np.float32)
    where = data if args.data else "the built-in corpus, prepared as `npbert pretrain` does"
    print(f"b. held-out evaluation of a random {opts.preset} model on {where}: {len(heldout)} pairs, "
          f"batches of {opts.batch_size}")

    def padded(params, config, **batch):
        return pretraining_forward(params, config, **batch, rng=None)[0]

    def run(**forward):
        e = evaluate(params, config, heldout, opts.batch_size, **forward)
        return ", ".join(f"{k} {v:.6f}" for k, v in e.items())
    compare("   evaluate", {"padded": lambda: run(forward=padded), "packed": lambda: run()}, args)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", help="a fine-tuned checkpoint for --task (a); without it, a is skipped")
    p.add_argument("--task", default="rt-polarity")
    p.add_argument("--split", default="dev", help="the task's split or file to evaluate on (default dev)")
    p.add_argument("--batch-size", type=int, default=64, help="as `npbert evaluate`'s default")
    p.add_argument("--data", help="a prepared pretraining directory (b; default: the built-in corpus)")
    p.add_argument("--skip-heldout", action="store_true", help="only a")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--backends", default="numpy,numba",
                   help="evaluate's and predict's default is numpy, pretrain's and finetune's numba (default: both)")
    args = p.parse_args(argv)
    if args.checkpoint:
        finetuned_evaluation(args)
    if not args.skip_heldout:
        heldout_evaluation(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
