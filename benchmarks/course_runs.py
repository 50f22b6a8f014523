"""The runs the course quotes, recorded: what demos/README.md and docs/course_model.md say about them is
checked against this record by tests/course/test_figures_from_recorded_runs.py.

    python benchmarks/course_runs.py                    both runs (about 15 min of CPU), then the record
    python benchmarks/course_runs.py --only learn       part 6's short run only (about 2 min of CPU)

- learn: part 6's `npbert pretrain --steps 300 --eval-every 50 --log-every 10` on the built-in corpus,
  its metrics.jsonl and `npbert fill-mask` on part 6's sentence;
- course_model: `python demos/course_model.py`'s pretraining, its metrics.jsonl, and its guesses for
  the course's sentences.

Each runs on one thread (NPBERT_NUM_THREADS=1, the numba backend), as the course's commands are
quoted; CPU seconds are the run's own (user + system of the npbert process), wall seconds its
elapsed time on this machine, which is shared. The record is tests/fixtures/course_runs.json,
with the CPU it ran on.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "demos"))
sys.path.insert(0, str(ROOT))

import course_model  # noqa: E402  (demos/course_model.py: the recipe, the sentences)
from benchmarks.machine import cpu_name  # noqa: E402

RECORD = ROOT / "tests" / "fixtures" / "course_runs.json"
LEARN = ["--steps", "300", "--eval-every", "50", "--log-every", "10"]
LEARN_SENTENCE = "every morning , ella goes to the [MASK] ."


def timed(cmd) -> dict:
    """Run cmd on one thread -> its CPU seconds (user + system) and wall seconds."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(cmd, check=True, env={**os.environ, "NPBERT_NUM_THREADS": "1"}, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": round(cpu, 1), "wall_s": round(time.perf_counter() - start, 1)}


def metrics(out: Path) -> list:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def learn_run(out: Path) -> dict:
    cmd = [sys.executable, "-m", "npbert.cli", "pretrain", *LEARN, "--out", str(out), "--overwrite"]
    record = {"command": "npbert pretrain " + " ".join(LEARN) + " --out runs/learn", **timed(cmd)}
    from npbert.checkpoint import load_pretrained
    from npbert.fill_mask import fill_mask
    config, params, tokenizer = load_pretrained(out / "checkpoint")
    record["guesses"] = {LEARN_SENTENCE: fill_mask(params, config, tokenizer, LEARN_SENTENCE, 5)[0]}
    return {**record, "metrics": metrics(out)}


def course_model_run(out: Path) -> dict:
    cmd = course_model.command(str(out)) + ["--overwrite"]
    record = {"command": "python demos/course_model.py", "pretrain": " ".join(course_model.RECIPE), **timed(cmd)}
    record["guesses"] = course_model.guesses(str(out / "checkpoint"))
    record["megabytes"] = {f: round((out / "checkpoint" / f).stat().st_size / 1e6)
                           for f in ("model.safetensors", "training_state.npz")}
    return {**record, "metrics": metrics(out)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("learn", "course_model"), help="record one run, keep the other's")
    parser.add_argument("--work", default=str(ROOT / "runs" / "course-record"), help="where the runs go")
    args = parser.parse_args(argv)
    record = json.loads(RECORD.read_text()) if RECORD.is_file() else {}
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "learn"):
        record["learn"] = learn_run(work / "learn")
    if args.only in (None, "course_model"):
        record["course_model"] = course_model_run(work / "course")
    record["machine"] = {"cpu": cpu_name(), "threads": 1, "backend": "numba"}
    record["made_by"] = "python benchmarks/course_runs.py"
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {RECORD.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
