"""The default run (`npbert pretrain`, no arguments: the built-in corpus, the tiny preset) over
several seeds: the figures README, docs/pretraining.md, docs/results.md and demos/README.md quote.

    python benchmarks/default_run_seeds.py                       # seeds 0..4, 2 runs at a time
    python benchmarks/default_run_seeds.py --seeds 10 --jobs 2   # more seeds
    python benchmarks/default_run_seeds.py --quick               # 2 seeds of 60 steps: a smoke test
    python benchmarks/default_run_seeds.py -- --learning-rate 1e-3 --warmup-steps 200   # another recipe
    python benchmarks/default_run_seeds.py --seeds 2 --jobs 1 --threads all   # as `npbert pretrain` runs

Every seed is its own `python -m npbert.cli pretrain --seed S` process with one BLAS and one
kernel thread (--threads all: the kernels on every CPU this process may use, the CLI's default),
so --jobs of them run side by side on as many cores; arguments after `--` go to every run (a
candidate recipe). A seed whose result is already in OUT/seed-S/result.json is not
run again (an interrupted sweep continues; delete OUT to start over).

It prints one line per seed and the mean, the standard deviation (sample, n - 1) and the range
min..max over seeds of: held-out MLM and NSP accuracy (every held-out pair, the run's final
evaluation), their baselines, the last logged training loss, the wall time and the CPU time of
the process. With one thread per run the CPU time does not depend on how loaded the machine is
(the wall time does): it is the time the run takes on one idle core of this machine.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONE_THREAD = {"NPBERT_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# --quick: each run this short, on 500 of the built-in corpus's 4,000 documents, with the default
# schedule scaled to it; tests/benchmark_scripts/test_default_run_seeds.py holds its final loss to QUICK_LOSS.
QUICK = ["--steps", "60", "--max-documents", "500"]
QUICK_LOSS = (5.65, 5.85)         # seeds 0 and 1: 5.724, 5.774 (AVX-512)
FIGURES = (("mlm_acc", "held-out MLM accuracy", "{:.3f}"), ("baseline_mlm_acc", "  its baseline", "{:.3f}"),
           ("nsp_acc", "held-out NSP accuracy", "{:.3f}"), ("baseline_nsp_acc", "  its baseline", "{:.3f}"),
           ("final_loss", "final training loss", "{:.3f}"), ("wall_s", "wall time (s)", "{:.0f}"),
           ("cpu_s", "CPU time (s)", "{:.0f}"))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="runs/default-seeds", help="one run directory per seed under it")
    p.add_argument("--seeds", type=int, default=5, help="how many seeds (default 5)")
    p.add_argument("--first-seed", type=int, default=0, help="seeds FIRST .. FIRST+N-1 (default 0)")
    p.add_argument("--jobs", type=int, default=2, help="runs side by side, one thread each (default 2)")
    p.add_argument("--quick", action="store_true", help=f"2 seeds, {' '.join(QUICK)} each (a smoke test)")
    p.add_argument("--threads", choices=("1", "all"), default="1",
                   help="the kernels' threads: 1 (default), or all the CPUs, as `npbert pretrain` runs")
    args = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    seeds = list(range(args.first_seed, args.first_seed + (2 if args.quick else args.seeds)))
    recipe = (QUICK if args.quick else []) + extra
    threads = "one thread" if args.threads == "1" else f"every CPU ({len(os.sched_getaffinity(0))}) for the kernels"
    print(f"npbert pretrain {' '.join(recipe) or '(the defaults)'} over seeds {seeds[0]}..{seeds[-1]}, "
          f"{args.jobs} at a time, {threads} each; runs in {args.out} (load average {os.getloadavg()[0]:.1f})",
          flush=True)
    env = thread_env(args.threads)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(lambda s: run_seed(args.out, s, recipe, env), seeds))
    print(report(results, recipe))
    return 0


def thread_env(threads: str) -> dict:
    """A run's thread variables: one thread for everything ("1"), or the kernels on every CPU ("all",
    as `npbert pretrain` runs when NPBERT_NUM_THREADS is unset) with BLAS on one, as the CLI sets it."""
    return ONE_THREAD if threads == "1" else {k: v for k, v in ONE_THREAD.items() if k != "NPBERT_NUM_THREADS"}


def run_seed(out: str, seed: int, recipe: list, threads: dict = ONE_THREAD) -> dict:
    """One `npbert pretrain --seed seed` (its log in OUT/seed-S.log), or its earlier result."""
    run_dir = os.path.join(out, f"seed-{seed}")
    result_file = os.path.join(run_dir, "result.json")
    if os.path.exists(result_file):
        with open(result_file) as f:
            result = json.load(f)
        if result["recipe"] == recipe and result.get("threads", ONE_THREAD) == threads:
            print(f"seed {seed}: kept from {result_file}", flush=True)
            return result
    os.makedirs(out, exist_ok=True)
    command = [sys.executable, "-m", "npbert.cli", "pretrain", "--out", run_dir, "--seed", str(seed), *recipe]
    if os.path.exists(run_dir):
        command.append("--overwrite")          # an unfinished earlier run of this seed
    env = {k: v for k, v in os.environ.items() if k != "NPBERT_NUM_THREADS"}
    env.update(threads, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    t0 = time.perf_counter()
    with open(os.path.join(out, f"seed-{seed}.log"), "w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=os.getcwd())
        _, status, usage = os.wait4(proc.pid, 0)   # this child's own CPU time, not every child's
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"seed {seed} failed (exit {proc.returncode}): see {log.name}")
    result = dict(seed=seed, recipe=recipe, threads=threads, **final_figures(run_dir, log.name),
                  wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime)
    with open(result_file, "w") as f:
        json.dump(result, f)
    print(seed_line(result), flush=True)
    return result


def final_figures(run_dir: str, log_file: str) -> dict:
    """The run's final held-out accuracies (all held-out pairs), their baselines and its last
    logged training loss: from metrics.jsonl, and from the log's closing lines for a final
    evaluation that metrics.jsonl does not hold."""
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    baseline = next(r for r in records if r["kind"] == "baseline")
    final = next((r for r in reversed(records) if r["kind"] == "final"), None)
    if final is None:                          # the figures as the run printed them
        with open(log_file) as f:
            text = f.read()
        final = {k: float(re.findall(rf"held-out {name} accuracy\D*?(\d\.\d+)", text)[-1])
                 for k, name in (("mlm_acc", "MLM"), ("nsp_acc", "NSP"))}
    loss = [r["loss"] for r in records if r["kind"] == "train"][-1]
    return dict(mlm_acc=final["mlm_acc"], nsp_acc=final["nsp_acc"], baseline_mlm_acc=baseline["mlm_acc"],
                baseline_nsp_acc=baseline["nsp_acc"], final_loss=loss)


def seed_line(r: dict) -> str:
    return (f"seed {r['seed']}: held-out MLM {r['mlm_acc']:.3f} NSP {r['nsp_acc']:.3f} (baselines "
            f"{r['baseline_mlm_acc']:.3f}, {r['baseline_nsp_acc']:.3f}) | final loss {r['final_loss']:.3f} | "
            f"wall {r['wall_s']:.0f} s, CPU {r['cpu_s']:.0f} s")


def report(results: list, recipe: list) -> str:
    """A line per seed, then mean +- std (n - 1) and min..max of every figure over the seeds."""
    results = sorted(results, key=lambda r: r["seed"])
    lines = [seed_line(r) for r in results]
    lines.append(f"over {len(results)} seeds ({' '.join(recipe) or 'the default recipe'}): mean +- std, min..max")
    for key, name, fmt in FIGURES:
        values = [r[key] for r in results]
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        lines.append(f"  {name:<24} {fmt.format(statistics.mean(values))} +- {fmt.format(std)}   "
                     f"{fmt.format(min(values))}..{fmt.format(max(values))}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
