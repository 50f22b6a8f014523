"""Does `npbert pretrain` on two threads beat one on a busy machine? The default run's first steps
(the tiny preset, the built-in corpus) in its own process per setting, settings alternating round
by round, beside --busy K processes of this script's own that keep a core busy each (K = 0: the
machine as it is; its load average is printed with every run).

    python benchmarks/busy_threads.py                    # the machine as it is
    python benchmarks/busy_threads.py --busy 2           # beside two busy loops of its own
    python benchmarks/busy_threads.py --steps 80 --rounds 3 -- --preset mini

The settings: one thread (NPBERT_NUM_THREADS=1); two threads as npbert runs them (its worker
sleeps when a loop ends: npbert sets OMP_WAIT_POLICY=PASSIVE unless you set it,
npbert/kernels/threads.py); two threads whose worker spins ~3 ms after each loop before it sleeps
(GNU OpenMP's own default, GOMP_SPINCOUNT=300000). Per setting: the training tokens/s of the
steps after the first --log-every (wall clock, as the run logs them), and the process's wall and
CPU seconds (import, compile-cache load and the final evaluation included), best and median
over rounds. Arguments after `--` go to every run.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETTINGS = {
    "1 thread": {"NPBERT_NUM_THREADS": "1"},
    "2 threads, worker sleeps (npbert's default)": {"NPBERT_NUM_THREADS": "2"},
    "2 threads, worker spins ~3 ms (GNU OpenMP's default)": {"NPBERT_NUM_THREADS": "2", "GOMP_SPINCOUNT": "300000"},
}


def busy_loop() -> None:
    while True:
        pass


def one_run(env: dict, steps: int, log_every: int, extra: list) -> dict:
    """One `npbert pretrain` process: its steps' tokens/s after the first log line, wall and CPU."""
    with tempfile.TemporaryDirectory(prefix="npbert-busy-") as tmp:
        out = os.path.join(tmp, "run")
        argv = [sys.executable, "-m", "npbert.cli", "pretrain", "--steps", str(steps), "--log-every", str(log_every),
                "--eval-every", "0", "--save-every", "0", "--out", out, *extra]
        clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
        load = os.getloadavg()[0]
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=dict(clean, PYTHONPATH=ROOT, **env), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"npbert pretrain failed:\n{proc.stderr.read().decode()}")
        with open(os.path.join(out, "metrics.jsonl")) as f:
            rates = [r["tokens_per_s"] for r in map(json.loads, f) if r["kind"] == "train"][1:]
    return {"tokens_per_s": statistics.median(rates), "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "load": load}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--busy", type=int, default=0, help="busy loops of this script's own beside the runs (default 0)")
    p.add_argument("--steps", type=int, default=40, help="training steps a run (default 40)")
    p.add_argument("--log-every", type=int, default=10, help="steps a tokens/s figure (default 10; the first is dropped)")
    p.add_argument("--rounds", type=int, default=2, help="runs of each setting, alternating (default 2)")
    p.add_argument("--spin-counts", default="", metavar="N,N",
                   help="more settings: two threads whose worker spins N times after each loop (GOMP_SPINCOUNT)")
    args = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.steps < 2 * args.log_every:
        p.error("--steps must be at least twice --log-every: the first tokens/s figure is dropped")
    from machine import cpu_name                                        # benchmarks/machine.py
    print(f"CPU: {cpu_name()}; {len(os.sched_getaffinity(0))} CPUs for this process; {args.busy} busy loops; "
          f"{args.steps} steps a run{' ' + ' '.join(extra) if extra else ''}")
    loops = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(args.busy)]
    for loop in loops:
        loop.start()
    settings = dict(SETTINGS)
    for count in filter(None, args.spin_counts.split(",")):
        settings[f"2 threads, worker spins {int(count):,} times"] = {"NPBERT_NUM_THREADS": "2", "GOMP_SPINCOUNT": count}
    runs = {name: [] for name in settings}
    try:
        for round_ in range(args.rounds):
            for name, env in settings.items():
                r = one_run(env, args.steps, args.log_every, extra)
                runs[name].append(r)
                print(f"round {round_ + 1}, {name}: {r['tokens_per_s']:,.0f} tokens/s, {r['wall_s']:.1f} s wall, "
                      f"{r['cpu_s']:.1f} s CPU (load average {r['load']:.1f})", flush=True)
    finally:
        for loop in loops:
            loop.terminate()
    one = statistics.median(r["tokens_per_s"] for r in runs["1 thread"])
    print("\nsetting: tokens/s best / median (median / one thread's median); wall s; CPU s (medians)")
    for name, rs in runs.items():
        rate = statistics.median(r["tokens_per_s"] for r in rs)
        print(f"  {name}: {max(r['tokens_per_s'] for r in rs):,.0f} / {rate:,.0f} ({rate / one:.2f}x); "
              f"{statistics.median(r['wall_s'] for r in rs):.1f}; {statistics.median(r['cpu_s'] for r in rs):.1f}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
