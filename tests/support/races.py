"""Races between writers, repeated: two writers started at the same moment on one
directory, counted. Not a test (each trial is a few seconds of two real processes); the counts
are printed, e.g. "two prepares into one --out x20: 20 refused, 0 mixed".

    python tests/support/races.py --trials 20 --out /tmp/races

Races:
  prepare   two `npbert prepare` with different seeds into one --out; "mixed" is a directory whose
            shards are not byte for byte those of the seed its manifest names (or that fails to load)
  alias     `npbert pretrain --out R` and `--out alias` (alias -> R) started together; "both wrote"
            is both exiting 0, or metrics.jsonl holding a step twice
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPBERT = [sys.executable, "-m", "npbert.cli"]
ENV = dict(os.environ, PYTHONPATH=ROOT, NPBERT_NUM_THREADS="1")
PREPARE = ["--max-documents", "400", "--max-seq-length", "32", "--dupe-factor", "2"]
PRETRAIN = ["--steps", "40", "--batch-size", "8", "--preset", "tiny", "--eval-every", "0", "--save-every", "0",
            "--backend", "numpy"]


def start(*argv):
    return subprocess.Popen([*NPBERT, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def together(*commands) -> list:
    procs = [start(*argv) for argv in commands]
    return [(p.wait(), p.communicate()[1]) for p in procs]


def shard_digests(directory) -> dict:
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    files = [s["file"] for split in manifest["splits"].values() for s in split["shards"]]
    return {name: hashlib.sha256(open(os.path.join(directory, name), "rb").read()).hexdigest() for name in files}


def prepare_race(out, trials) -> str:
    reference = {}
    for seed in (1, 2):
        where = os.path.join(out, f"reference-{seed}")
        if not os.path.exists(where):
            subprocess.run([*NPBERT, "prepare", "--out", where, "--seed", str(seed), *PREPARE], env=ENV, check=True,
                           capture_output=True)
        reference[seed] = shard_digests(where)
    refused = other_options = both = mixed = 0
    for trial in range(trials):
        target = os.path.join(out, f"prepare-{trial}")
        shutil.rmtree(target, ignore_errors=True)
        results = together(*(["prepare", "--out", target, "--seed", str(s), *PREPARE] for s in (1, 2)))
        refused += sum("in use by another npbert process" in err for _, err in results)
        other_options += sum("prepared with other options" in err for _, err in results)
        both += all(code == 0 for code, _ in results)
        try:
            with open(os.path.join(target, "manifest.json")) as f:
                seed = json.load(f)["options"]["seed"]
            mixed += shard_digests(target) != reference[seed]
        except (OSError, ValueError, KeyError):
            mixed += 1
    return (f"two prepares into one --out x{trials}: {refused} refused (in use), {other_options} refused (other "
            f"options, after the first finished), {both} with both exit 0, {mixed} mixed")


def alias_race(out, data, trials) -> str:
    refused = both = twice = 0
    for trial in range(trials):
        base = os.path.join(out, f"alias-{trial}")
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(os.path.join(base, "R"))
        os.symlink("R", os.path.join(base, "alias"))
        results = together(["pretrain", "--data", data, "--out", os.path.join(base, "R"), "--seed", "1", *PRETRAIN],
                           ["pretrain", "--data", data, "--out", os.path.join(base, "alias"), "--seed", "2", *PRETRAIN])
        refused += sum(code == 2 for code, _ in results)          # in use, or (came after) already saved
        both += all(code == 0 for code, _ in results)
        with open(os.path.join(base, "R", "metrics.jsonl")) as f:
            steps = [r["step"] for r in map(json.loads, f) if r["kind"] == "train"]
        twice += len(steps) != len(set(steps))
    return (f"pretrain --out R and --out alias (alias -> R) together x{trials}: {refused} refused, {both} with both "
            f"exit 0, {twice} with a step logged twice")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--out", default="races")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print(prepare_race(args.out, args.trials), flush=True)
    data = os.path.join(args.out, "reference-1")
    print(alias_race(args.out, data, max(1, args.trials // 4)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
