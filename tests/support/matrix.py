"""Run the test suite under several code paths on this one machine, one pytest run per row,
then print each row's counts and time. A test's verdict must not depend on the row: a test
that passes under one and fails under another assumes bit-equality where npbert promises
none (docs/determinism.md).

    python tests/support/matrix.py                      # every row, the whole suite (~3 min a row on 2 idle cores)
    python tests/support/matrix.py -x tests/model/test_model.py -k float32    # pytest's own arguments pass through
    python tests/support/matrix.py --matrix-rows 1,3    # some rows only (numbers as printed)

Not a test file (pytest collects test_*.py only): too slow for every CI run. What varies:
- NPBERT_BACKEND numpy / numba: the Python default (numpy) against the training commands' one;
- OPENBLAS_NUM_THREADS 1 / 2: BLAS splits a matmul differently;
- OPENBLAS_CORETYPE: OpenBLAS's kernel for another CPU (unset: its choice for this one).
  OpenBLAS obeys it even when this CPU lacks the instructions: SkylakeX on a CPU without
  AVX-512 dies with SIGILL at the first matmul, so such a row is skipped, saying why;
- NUMBA_CPU_NAME generic / haswell / unset: npbert's kernels compiled for any x86-64, for Haswell
  (with this CPU's features), or for this CPU (the default; "host" is not a name LLVM knows),
  each row with its own NUMBA_CACHE_DIR (a fresh temp dir: a cold compile, as a new install);
- NPY_DISABLE_CPU_FEATURES: NumPy's own SIMD loops (sums, exp, tanh) as on an older CPU.
Rows run one after another (each uses every core), the user's default first.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIABLES = ("NPBERT_BACKEND", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "NUMBA_CPU_NAME",
             "NPY_DISABLE_CPU_FEATURES")


def numpy_simd_features() -> str:
    """NumPy's dispatched SIMD targets this CPU has, space-separated: disabling them all leaves
    NumPy on its baseline loops, as on the oldest CPU its wheel supports."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:                                 # numpy < 2
        from numpy.core import _multiarray_umath as umath
    return " ".join(f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f))


# (what the row stands for, its settings, the /proc/cpuinfo flags it needs). Each value of each
# variable appears at least once; unset means the default a user gets.
ROWS = [
    ("defaults (what a user runs)", {}, ()),
    ("numba kernels for any x86-64, 1 BLAS thread",
     dict(NPBERT_BACKEND="numba", OPENBLAS_NUM_THREADS="1", NUMBA_CPU_NAME="generic"), ()),
    ("numpy backend, 2 BLAS threads, Haswell BLAS",
     dict(NPBERT_BACKEND="numpy", OPENBLAS_NUM_THREADS="2", OPENBLAS_CORETYPE="Haswell", NUMBA_CPU_NAME="haswell"), ()),
    ("numba, AVX-512 BLAS (SkylakeX)",
     dict(NPBERT_BACKEND="numba", OPENBLAS_NUM_THREADS="2", OPENBLAS_CORETYPE="SkylakeX"),
     ("avx512f", "avx512bw", "avx512dq", "avx512vl")),
    ("an older CPU: AVX-only BLAS (Sandybridge), NumPy baseline SIMD, generic numba",
     dict(OPENBLAS_NUM_THREADS="1", OPENBLAS_CORETYPE="Sandybridge", NUMBA_CPU_NAME="generic",
          NPY_DISABLE_CPU_FEATURES=numpy_simd_features()), ("avx",)),
]


def cpu_flags() -> set:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((x for x in text.splitlines() if x.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def counts(output: str) -> dict:
    """pytest's closing line, e.g. '3 failed, 405 passed, 2 skipped in 190.1s' -> {'failed': 3, ...}."""
    lines = [x for x in output.splitlines() if re.search(r"\d+ (passed|failed|error)", x)]
    found = re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)", lines[-1] if lines else "")
    return {kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in found}


def run_row(number, what, settings, pytest_args, log_dir) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES and k != "NUMBA_CACHE_DIR"}
    env.update(settings)
    with tempfile.TemporaryDirectory(prefix=f"npbert-matrix-{number}-numba-") as cache:
        env["NUMBA_CACHE_DIR"] = cache
        print(f"\n=== row {number}: {what}: {describe(settings)}", flush=True)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-rfE", "-p", "no:cacheprovider", *pytest_args],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    output = proc.stdout + proc.stderr
    log = Path(log_dir) / f"row{number}.log"
    log.write_text(output)
    tail = output.strip().splitlines()[-1:] or ["(no output)"]
    print(f"    {tail[0]}  (log: {log})", flush=True)
    result = dict(counts(output), seconds=seconds, returncode=proc.returncode,
                  failures=[x for x in output.splitlines() if x.startswith(("FAILED ", "ERROR "))])
    if proc.returncode < 0:
        result["crashed"] = f"signal {-proc.returncode}"
    return result


def describe(settings) -> str:
    return " ".join(f"{k}={v}" for k, v in settings.items()) or "(nothing set)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False,
                                     epilog="Other arguments go to pytest.")
    parser.add_argument("--matrix-rows", default="", help="comma-separated row numbers to run (default: all)")
    parser.add_argument("--matrix-logs", default=None, help="directory for each row's pytest output "
                                                            "(default: a new temp dir)")
    args, pytest_args = parser.parse_known_args(argv)
    chosen = {int(x) for x in args.matrix_rows.split(",") if x.strip()} or set(range(1, len(ROWS) + 1))
    log_dir = args.matrix_logs or tempfile.mkdtemp(prefix="npbert-matrix-logs-")
    os.makedirs(log_dir, exist_ok=True)
    flags, table = cpu_flags(), []
    for number, (what, settings, needs) in enumerate(ROWS, 1):
        if number not in chosen:
            continue
        missing = [f for f in needs if f not in flags]
        if missing:
            print(f"\n=== row {number}: {what}: skipped, this CPU lacks {', '.join(missing)} "
                  f"(OpenBLAS would stop at its first matmul with SIGILL)", flush=True)
            table.append((number, what, settings, None))
        else:
            table.append((number, what, settings, run_row(number, what, settings, pytest_args, log_dir)))
    print_table(table)
    ran = [r for *_, r in table if r is not None]
    return 0 if ran and all(r["returncode"] == 0 for r in ran) else 1


def print_table(table) -> None:
    print(f"\n{'row':>3}  {'passed':>6}  {'failed':>6}  {'error':>5}  {'skipped':>7}  {'time':>7}  settings")
    for number, what, settings, r in table:
        if r is None:
            print(f"{number:>3}  {'-':>6}  {'-':>6}  {'-':>5}  {'-':>7}  {'-':>7}  skipped (CPU): {describe(settings)}")
            continue
        note = f"  CRASHED ({r['crashed']})" if "crashed" in r else ""
        print(f"{number:>3}  {r.get('passed', 0):>6}  {r.get('failed', 0):>6}  {r.get('error', 0):>5}  "
              f"{r.get('skipped', 0):>7}  {r['seconds']:>6.0f}s  {describe(settings)}{note}")
        for line in r["failures"]:
            print(f"{'':>5}{line}")


if __name__ == "__main__":
    sys.exit(main())
