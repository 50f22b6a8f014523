"""Where one step's time goes beyond its matmuls: the step (training or pretraining_inference),
its needed ceiling (the matmuls the loss needs, alone: workload.needed_matmul_steps), and the time
in each hot op of the numba backend (parts.py's ops view; exclusive times, the rest is "other").

    python benchmarks/profile_step.py --preset tiny --vocab 30522 --kind train --padded
    python benchmarks/profile_step.py --preset mini --vocab 30522 --kind infer --threads 2

One thread times the calling thread's CPU, more the wall clock (waiting --pause seconds before each
step, as ab.py does); best of --rounds for the step and the ceiling, the ops view from the fastest
of its --rounds steps. The ops' sum is the step with the wrappers' own cost (~1 us a call).
"""
from __future__ import annotations

import argparse
import os
import sys
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="tiny")
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--kind", choices=("train", "infer"), default="train")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--padded", action="store_true", help="random lengths in [seq / 4, seq] (ab.py's)")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--pause", type=float, default=0.25, help="seconds before each step, with --threads > 1")
    args = p.parse_args(argv)
    if args.threads < 1 or args.rounds < 1 or not 0 <= args.pause <= 60:
        p.error("--threads and --rounds at least 1, --pause in [0, 60]")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.dirname(here)]       # workload.py, and this checkout's npbert
    import machine
    machine.set_thread_count(args.threads)             # before NumPy loads its BLAS
    import npbert
    import workload
    from machine import cpu_name
    from npbert.allocator import keep_freed_memory
    from parts import Timer, ops_view

    if args.preset not in workload.PRESETS:
        p.error(f"--preset {args.preset}: one of {', '.join(workload.PRESETS)}")
    keep_freed_memory()
    npbert.set_backend("numba")
    config = workload.make_config(args.preset, args.vocab)
    batch, info = workload.benchmark_batch(config, "random", workload.PRESETS[args.preset], workload.T, args.padded)
    train, infer, _ = workload.npbert_steps(config, batch)
    needed_train, needed_infer = workload.needed_matmul_steps(config, batch["attention_mask"], batch["mlm_positions"])
    matmuls = workload.needed_matmuls(config, batch["attention_mask"], batch["mlm_positions"])
    step, ceiling = (train, needed_train) if args.kind == "train" else (infer, needed_infer)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    pause = args.pause if args.threads > 1 else 0.0

    def timed(f):
        time.sleep(pause)
        t0 = clock()
        f()
        return clock() - t0

    step(), ceiling()                                  # warm-up: compilation, first touch
    best_step = min(timed(step) for _ in range(args.rounds))
    best_ceiling = min(timed(ceiling) for _ in range(args.rounds))
    views = []
    for _ in range(args.rounds):
        timer = Timer()
        with ops_view(timer):
            total = timed(step)
        views.append((total, dict(timer.seconds)))
    total, seconds = min(views, key=lambda v: v[0])
    print(f"{cpu_name()}; {args.preset} / {args.vocab:,}, {args.kind}, {args.threads} thread(s), fill {info['fill']:.2f}")
    flops = (3 if args.kind == "train" else 1) * workload.matmuls_flops(matmuls)
    print(f"step {best_step * 1e3:.1f} ms, needed ceiling {best_ceiling * 1e3:.1f} ms "
          f"(share {best_ceiling / best_step:.2f}, {flops / best_ceiling / 1e9:.0f} GFLOP/s of {flops / 1e9:.1f} GFLOP); "
          f"beyond the ceiling {(best_step - best_ceiling) * 1e3:.1f} ms")
    print(f"ops view (a step of {total * 1e3:.1f} ms):")
    op_flops = inference_op_flops(matmuls) if args.kind == "infer" else {}
    for name, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
        if s >= 5e-5:
            rate = f"  {op_flops[name] / s / 1e9:5.0f} GFLOP/s" if name in op_flops else ""
            print(f"  {name:34s} {s * 1e3:8.1f} ms{rate}")
    print(f"  {'other (Python, NumPy, the layers)':34s} {(total - sum(seconds.values())) * 1e3:8.1f} ms")
    return 0


# the inference ops that make workload.needed_matmuls' products (by name): their GFLOP/s in the ops view
INFERENCE_OPS = {"linear_forward": ("projections", "FFN down", "pooler", "NSP"),
                 "linear_gelu_forward": ("FFN up", "MLM transform"),        # bias + GELU fused with the product
                 "packed_attention_forward": ("scores", "context"),
                 "decoder_cross_entropy_forward": ("tied decoder",)}


def inference_op_flops(matmuls: list) -> dict:
    """{hot op: the FLOPs of its matmuls in one pretraining_inference step}."""
    import workload
    return {op: workload.matmuls_flops([m for m in matmuls if any(part in m[0] for part in parts)])
            for op, parts in INFERENCE_OPS.items()}


if __name__ == "__main__":
    sys.exit(main())
