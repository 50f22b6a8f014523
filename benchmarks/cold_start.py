"""What a first run pays to compile the Numba kernels: each command that runs kernels, in a fresh
process on a truly empty NUMBA_CACHE_DIR (cold), then again on the cache it filled (warm).

    python benchmarks/cold_start.py                        # every command, 1 and 2 threads
    python benchmarks/cold_start.py --commands pretrain --threads 1 --per-kernel 15

Prints, per command and thread count: the process's CPU seconds (all threads) and wall seconds,
cold and warm, and the CPU and wall seconds spent inside Numba's compiler (its "numba:compile"
events; nested compiles of callees counted once, in their caller's total); with --per-kernel N
the N kernels (function, argument types) whose own compile took longest. The commands run
on small inputs prepared first (the built-in corpus, a tiny checkpoint), so what they do
besides compiling is short: the cold - warm difference is the compile plus the cache's loads.

    pretrain       npbert pretrain --data <built-in corpus, prepared> --steps 1: the default
                   run's first step, its held-out evaluation and its checkpoint
    finetune       npbert finetune --model <checkpoint> --task builtin-sentence --stop-after 1
    fill-mask      npbert fill-mask <checkpoint> "the [MASK] sat on the mat ."
    minimal-pairs  npbert minimal-pairs <checkpoint> builtin --per-paradigm 2
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from numba.core import event

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = {"PYTHONPATH": os.pathsep.join(filter(None, [os.path.dirname(HERE), os.environ.get("PYTHONPATH")]))}
# every process it starts imports this checkout's npbert, not another one installed (as bench.py's workers)
COMMANDS = ("pretrain", "finetune", "fill-mask", "minimal-pairs")
TINY = ["--preset", "tiny", "--batch-size", "8", "--eval-every", "0", "--save-every", "0", "--log-every", "1"]


def command_args(name: str, work: str) -> list:
    """npbert's arguments for command `name`, on the inputs prepare_inputs made under work."""
    checkpoint = os.path.join(work, "setup-run", "checkpoint")
    out = os.path.join(work, f"out-{name}-{time.monotonic_ns()}")
    return {"pretrain": ["pretrain", "--data", os.path.join(work, "data"), "--steps", "1", "--out", out, *TINY],
            "finetune": ["finetune", "--model", checkpoint, "--task", "builtin-sentence", "--stop-after", "1",
                         "--batch-size", "8", "--out", out],
            "fill-mask": ["fill-mask", checkpoint, "the [MASK] sat on the mat ."],
            "minimal-pairs": ["minimal-pairs", checkpoint, "builtin", "--per-paradigm", "2"]}[name]


def prepare_inputs(work: str) -> None:
    """The built-in corpus prepared once, and a one-step tiny checkpoint (on their own kernel cache)."""
    env = {"NUMBA_CACHE_DIR": os.path.join(work, "setup-cache")}
    run_npbert(["prepare", "--out", os.path.join(work, "data"), "--max-documents", "400"], env)
    run_npbert(["pretrain", "--data", os.path.join(work, "data"), "--steps", "1",
                "--out", os.path.join(work, "setup-run"), *TINY], env)


def run_npbert(args: list, env: dict) -> None:
    r = subprocess.run([sys.executable, "-c", "import sys; from npbert.cli import main; sys.exit(main(sys.argv[1:]))", *args], env={**os.environ, **CHECKOUT, **env},
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"npbert {' '.join(args)} failed ({r.returncode}):\n{r.stderr}")


def measure(args: list, cache_dir: str, threads: int) -> dict:
    """One fresh process running npbert `args` under the compile timer (the --worker mode below)."""
    env = {**os.environ, **CHECKOUT, "NUMBA_CACHE_DIR": cache_dir, "NPBERT_NUM_THREADS": str(threads)}
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(args)], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{\"cold_start\"")]
    if r.returncode != 0 or not lines:
        sys.exit(f"npbert {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return json.loads(lines[-1])["cold_start"]


def worker(args: list) -> None:
    """Run npbert's main(args) in this process, timing every compile Numba does; print one JSON line."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    timer = CompileTimer()
    event.register("numba:compile", timer)
    from npbert.cli import main
    code = main(args)
    if code:
        sys.exit(code)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"cold_start": {"cpu": time.process_time() - cpu0, "wall": time.perf_counter() - wall0,
                                     "cpu_total": usage.ru_utime + usage.ru_stime,
                                     "compile_cpu": timer.total_cpu, "compile_wall": timer.total_wall,
                                     "kernels": timer.own}}))


class CompileTimer(event.Listener):
    """A numba.core.event listener: the CPU and wall time of every outermost compile, and each
    (function, argument types)'s own share (its time minus its nested callees' compiles)."""

    def __init__(self):
        self.stack, self.own, self.total_cpu, self.total_wall = [], {}, 0.0, 0.0
        self.names = []

    def on_start(self, ev):
        self.names.append(_name(ev))
        self.stack.append([(time.process_time(), time.perf_counter()), 0.0, 0.0])

    def on_end(self, ev):
        now = (time.process_time(), time.perf_counter())
        (cpu0, wall0), child_cpu, child_wall = self.stack.pop()
        cpu, wall = now[0] - cpu0, now[1] - wall0
        name = self.names.pop()
        own = self.own.setdefault(name, [0.0, 0.0, self.names[-1] if self.names else ""])
        own[0], own[1] = own[0] + cpu - child_cpu, own[1] + wall - child_wall
        if self.stack:
            self.stack[-1][1] += cpu
            self.stack[-1][2] += wall
        else:
            self.total_cpu, self.total_wall = self.total_cpu + cpu, self.total_wall + wall


def _name(ev) -> str:
    """module.function(argument types) of a compile event."""
    d = ev.data["dispatcher"]
    return f"{d.py_func.__module__.rsplit('.', 1)[-1]}.{d.py_func.__name__}{tuple(map(str, ev.data['args']))}"


def report(name: str, threads: int, cold: dict, warm: dict, per_kernel: int) -> None:
    print(f"{name:14s} {threads} thr  cold {cold['cpu']:6.1f} s CPU {cold['wall']:6.1f} s wall   "
          f"warm {warm['cpu']:5.1f} s CPU {warm['wall']:5.1f} s wall   "
          f"compiling {cold['compile_cpu']:5.1f} s CPU {cold['compile_wall']:5.1f} s wall, "
          f"{len(cold['kernels'])} compiles (warm: {len(warm['kernels'])})", flush=True)
    for kernel, (cpu, wall, _) in sorted(cold["kernels"].items(), key=lambda kv: -kv[1][0])[:per_kernel]:
        print(f"    {cpu:5.2f} s CPU {wall:5.2f} s wall  {kernel[:150]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--commands", default=",".join(COMMANDS), help=f"comma-separated, of {', '.join(COMMANDS)}")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (NPBERT_NUM_THREADS)")
    p.add_argument("--per-kernel", type=int, default=0, metavar="N", help="print the N longest compiles")
    p.add_argument("--json", metavar="FILE", help="also write every measurement, every compile's time, as JSON lines")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(json.loads(a.worker))
    sys.path.insert(0, HERE)
    import machine
    print(f"# {machine.cpu_name()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory() as work:
        prepare_inputs(work)
        for threads in map(int, a.threads.split(",")):
            for name in a.commands.split(","):
                with tempfile.TemporaryDirectory() as cache_dir:
                    cold = measure(command_args(name, work), cache_dir, threads)
                    warm = measure(command_args(name, work), cache_dir, threads)
                report(name, threads, cold, warm, a.per_kernel)
                if a.json:
                    with open(a.json, "a") as f:
                        f.write(json.dumps({"command": name, "threads": threads, "cold": cold, "warm": warm}) + "\n")
    print(f"# load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
