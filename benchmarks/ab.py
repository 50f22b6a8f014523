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
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="tiny")
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--impls", default="numpy,numba,hf-masked",
                   help="numpy, numba, hf-masked, hf (torch + transformers), ort (onnx + onnxruntime, --kind infer), "
                        "matmuls (the step's matmuls alone: the ceiling)")
    p.add_argument("--kind", choices=("train", "infer"), default="train")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--padded", action="store_true", help="random lengths in [seq / 4, seq], [PAD] after them")
    p.add_argument("--seq", type=int, default=128, help="tokens a sequence (masked positions: 20 per 128)")
    p.add_argument("--batch", type=int, default=None, help="sequences a batch (default: the preset's, 32 or 16)")
    p.add_argument("--clock", choices=("cpu", "wall"), default=None,
                   help="cpu: the calling thread's CPU time (default with --threads 1); wall: elapsed time")
    args = p.parse_args(argv)
    if "ort" in args.impls.split(",") and args.kind != "infer":
        p.error("ort is inference only: use --kind infer")
    args.clock = args.clock or ("cpu" if args.threads == 1 else "wall")
    if args.clock == "cpu" and args.threads != 1:
        p.error("--clock cpu counts the calling thread only: use it with --threads 1")
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NPBERT_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.dirname(here)]       # workload.py, and this checkout's npbert, not an installed one
    import npbert
    import workload
    from npbert.allocator import keep_freed_memory

    keep_freed_memory()
    config = workload.make_config(args.preset, args.vocab)
    B, T = args.batch or workload.PRESETS[args.preset], args.seq
    batch = workload.make_batch(config, B, padded=args.padded, T=T)
    steps = {}
    for impl in args.impls.split(","):
        if impl.startswith("hf"):
            from hf import hf_steps
            train, infer = hf_steps(config, batch, impl, args.threads)
        elif impl == "ort":
            from ort import ort_infer_step
            infer, info = ort_infer_step(config, workload.init_params(config), batch, args.threads)
            print(json.dumps(dict(kind="ort_check", **info)), file=sys.stderr)
        elif impl == "matmuls":
            train, infer = workload.matmul_steps(config, B, len(batch["mlm_positions"]), T)
        else:
            npbert.set_backend(impl)
            train, infer, _ = workload.npbert_steps(config, batch)
        steps[impl] = train if args.kind == "train" else infer
    times = {impl: [] for impl in steps}
    for round_ in range(args.rounds + 1):
        for impl, step in steps.items():
            if impl in npbert.backend.BACKENDS:
                npbert.set_backend(impl)
            t0 = clock()
            step()
            if round_:                                 # round 0 warms up (compilation, first touch)
                times[impl].append(clock() - t0)
    tokens = B * T
    flops = (workload.train_flops if args.kind == "train" else workload.forward_flops)(
        config, B, len(batch["mlm_positions"]), T)
    matmul = matmul_gflops(2048, clock)                # the machine's own float32 matmul, same clock
    base = min(times[next(iter(times))])
    for impl, ts in times.items():
        print(json.dumps(dict(kind=f"ab_{args.kind}", impl=impl, preset=args.preset, vocab=args.vocab,
                              threads=args.threads, batch=B, seq=T, padded=args.padded, clock=args.clock, rounds=args.rounds, min_step_s=min(ts),
                              median_step_s=statistics.median(ts), tokens_per_s=tokens / min(ts),
                              speedup_vs_first=base / min(ts), gflops=flops / min(ts) / 1e9,
                              matmul_2048_gflops=matmul, share_of_matmul=flops / min(ts) / 1e9 / matmul)))
    return 0


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
