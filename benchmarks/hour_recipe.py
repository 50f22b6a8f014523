"""The hour recipe: what one hour of one CPU core buys when pretraining a very small BERT on the
IMDB reviews, measured arm by arm (docs/hour_recipe.md shows what this prints).

    python benchmarks/hour_recipe.py run tiny-mlm mini-b16 --minutes 60 --seeds 0   # 2 runs side by side
    python benchmarks/hour_recipe.py blimp --blimp ~/blimp/data                     # BLiMP, first 20 a paradigm
    python benchmarks/hour_recipe.py summarize       # each finished run -> benchmarks/results/hour_recipe/*.json
    python benchmarks/hour_recipe.py report          # the tables, from those JSON files alone

Every arm is `npbert pretrain --data RUNS/DATA --budget MINUTES` (one thread) plus the arm's own
options. DATA is the IMDB reviews prepared once with `npbert prepare --corpus imdb` (data-imdb:
8,192 pieces, T 128, 80/10/10 masking, NSP pairs), or the same reviews, vocabulary and split
prepared otherwise (data-imdb-sentences: one sentence an instance). Every run is scored at the
end on data-imdb's held-out pairs, whatever it trained on, so the rows compare. A run is named
ARM-mMINUTES-sSEED under --runs; a run whose directory holds a finished model is not run again.

What each run keeps (small JSON, in the repository, so the tables regenerate without the runs):
its options and plan, CPU and wall time, every held-out evaluation (step, CPU minute, MLM
accuracy), the minute it first passed 0.2 held-out MLM (leaving the unigram plateau, whose
accuracy is ~0.13), the final held-out MLM on all 4,001 held-out pairs, and BLiMP when scored.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]                            # linguistics_results.py, and this checkout's npbert

from linguistics_results import Runner  # noqa: E402  (one-thread commands, side by side)

RESULTS = os.path.join(ROOT, "benchmarks", "results", "hour_recipe")
PLATEAU_EXIT = 0.2                       # held-out MLM accuracy: past the unigram plateau (~0.13)
BLIMP_PER_PARADIGM = 20

# Each arm: npbert pretrain's options beyond --data and --budget. "old" is the recipe of
# docs/linguistics.md's IMDB minis (peak lr 2e-3, 25 % warm-up, NSP on); the others change it.
DATA = {                                 # prepared data: `npbert prepare --corpus imdb` options beyond --out
    "data-imdb": [],
    "data-imdb-sentences": ["--instances", "sentences", "--vocab", "{runs}/data-imdb/vocab.txt"],
}
SENTENCES = ["--data", "{runs}/data-imdb-sentences"]
ARMS = {
    "old": ["--preset", "mini"],
    "mini-mlm": ["--preset", "mini", "--no-nsp", "--learning-rate", "1e-3", "--warmup-proportion", "0.06"],
    "mini-mlm-b16": ["--preset", "mini", "--no-nsp", "--learning-rate", "1e-3", "--warmup-proportion", "0.06",
                     "--batch-size", "16"],
    "tiny-mlm": ["--preset", "tiny", "--no-nsp", "--learning-rate", "1e-3", "--warmup-proportion", "0.06"],
    "tiny-mlm-lr2e-3": ["--preset", "tiny", "--no-nsp", "--learning-rate", "2e-3", "--warmup-proportion", "0.06"],
    "tiny-nsp": ["--preset", "tiny", "--learning-rate", "1e-3", "--warmup-proportion", "0.06"],
    "tiny-sentences": ["--preset", "tiny", "--no-nsp", "--learning-rate", "1e-3", "--warmup-proportion", "0.06",
                       *SENTENCES],
    "mini-sentences": ["--preset", "mini", "--no-nsp", "--learning-rate", "1e-3", "--warmup-proportion", "0.06",
                       *SENTENCES],
}


def run_name(arm: str, minutes: float, seed: int) -> str:
    return f"{arm}-m{minutes:g}-s{seed}"


QUICK = ["--corpus", "builtin", "--max-documents", "200"]   # --quick: the pipeline end to end in seconds


def prepare_commands(r: Runner, quick: bool) -> list:
    """Every data directory, data-imdb first (the others take its vocabulary)."""
    corpus = QUICK if quick else ["--corpus", "imdb"]
    return [[(r.path(name, "manifest.json"), ["prepare", *corpus, "--out", r.path(name),
                                              *[a.format(runs=r.runs) for a in extra]], r.path("logs", f"{name}.log"))]
            for name, extra in DATA.items()]


def pretrain_commands(r: Runner, arms, minutes: float, seeds, steps=None) -> list:
    """steps: the step count a budget planned before (its run's `budget` record), to give more
    seeds that count while other runs share the cores (a plan made then would be smaller)."""
    commands = []
    for arm in arms:
        for seed in seeds:
            name = run_name(arm, minutes, seed)
            length = ["--budget", f"{minutes:g}"] if steps is None else ["--steps", str(steps)]
            argv = ["pretrain", "--data", r.path("data-imdb"), "--out", r.path(name), "--seed", str(seed), *length,
                    "--eval-every", "100", "--save-every", "1000", "--log-every", "100",
                    *[a.format(runs=r.runs) for a in ARMS[arm]]]          # an arm's own --data comes last, and wins
            commands.append((r.path("done", f"{name}.json"), argv, r.path("logs", f"{name}.log")))
    return commands


def blimp_commands(r: Runner, blimp: str, whole: bool) -> list:
    """Every finished run on BLiMP's first 20 pairs a paradigm; whole: the hour's runs on all of
    it, beside the unigram and 3-gram of their corpus."""
    commands = []
    for name in finished_runs(r):
        if whole and "-m60-" in name:
            argv = ["minimal-pairs", r.path(name, "checkpoint"), blimp, "--baselines", "unigram,ngram", "--json",
                    r.path("scores", f"blimp-{name}.json")]
        elif not whole:
            argv = ["minimal-pairs", r.path(name, "checkpoint"), blimp, "--per-paradigm", str(BLIMP_PER_PARADIGM),
                    "--baselines", "none", "--json", r.path("scores", f"blimp{BLIMP_PER_PARADIGM}-{name}.json")]
        else:
            continue
        commands.append((argv[-1], argv, r.path("logs", f"{os.path.basename(argv[-1])[:-5]}.log")))
    return commands


def finished_runs(r: Runner) -> list:
    """The runs whose pretraining ended (the runner's marker with their CPU and wall time)."""
    done = r.path("done")
    return sorted(f[:-len(".json")] for f in os.listdir(done)) if os.path.isdir(done) else []


def records(path) -> list:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def summary(r: Runner, name: str) -> dict:
    """One finished run as the small JSON the tables are made from."""
    with open(r.path("done", f"{name}.json")) as f:
        cost = json.load(f)
    metrics = records(r.path(name, "metrics.jsonl"))
    with open(r.path(name, "checkpoint", "training_state.json")) as f:
        options = json.load(f)["options"]
    # the budget's plan; a run given --steps (a screen run before --budget existed) has its count
    plan = next((m for m in metrics if m["kind"] == "budget"), None) or dict(steps=options["steps"])
    [final] = [m for m in metrics if m["kind"] == "final"]
    per_step = cost["cpu_s"] / 60 / plan["steps"]          # CPU minutes a step, evaluations included
    curve = [dict(step=m["step"], cpu_min=round(m["step"] * per_step, 2), mlm_acc=m["mlm_acc"])
             for m in metrics if m["kind"] == "eval"]
    exit_ = next((c["cpu_min"] for c in curve if c["mlm_acc"] > PLATEAU_EXIT), None)
    out = dict(name=name, arm=name.rsplit("-m", 1)[0], options=options, plan=plan, cpu_s=cost["cpu_s"],
               wall_s=cost["wall_s"], heldout_mlm=standard_heldout_mlm(r, name), own_heldout_mlm=final["mlm_acc"],
               plateau_exit_cpu_min=exit_, curve=curve)
    for tag in (f"blimp{BLIMP_PER_PARADIGM}", "blimp"):          # its first 20 pairs a paradigm; all of it
        scores = r.path("scores", f"{tag}-{name}.json")
        if os.path.exists(scores):
            with open(scores) as f:
                groups = json.load(f)["groups"]
            out[tag] = {f"{g['level']}:{g['name']}": g["accuracy"]["bert"] for g in groups}
            if tag == "blimp":                          # the counting baselines of its corpus, where scored
                out["blimp_baselines"] = {f"{g['level']}:{g['name']}": {k: v for k, v in g["accuracy"].items()
                                                                       if k != "bert"} for g in groups}
    return out


def standard_heldout_mlm(r: Runner, name: str) -> float:
    """MLM accuracy over all of data-imdb's held-out pairs (T 128, 80/10/10), whatever the run trained on."""
    from npbert.checkpoint import load_pretrained
    from npbert.pretraining.recipe import evaluate, load_prepared
    loaded = load_pretrained(r.path(name, "checkpoint"))
    _, heldout = load_prepared(r.path("data-imdb"))
    return evaluate(loaded.params, loaded.config, heldout, 32, nsp=False)["mlm_acc"]


def summarize(r: Runner, results: str) -> None:
    os.makedirs(results, exist_ok=True)
    for name in finished_runs(r):
        with open(os.path.join(results, f"{name}.json"), "w") as f:
            json.dump(summary(r, name), f, indent=1)
            f.write("\n")
        print(f"wrote {os.path.join(results, name)}.json")


def mean_sd(values, scale=1.0, digits=3) -> str:
    values = [v * scale for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


BLIMP_COLUMNS = (("overall:overall", "BLiMP"), ("phenomenon:determiner_noun_agreement", "det.-noun"),
                 ("phenomenon:subject_verb_agreement", "subj.-verb"))


def report(results=RESULTS, arm=None, minutes=None) -> str:
    """Markdown: a row per arm and budget (or only `arm` at `minutes`), mean ± sd over its seeds."""
    runs = [json.load(open(os.path.join(results, f))) for f in sorted(os.listdir(results)) if f.endswith(".json")]
    groups = {}
    for run in runs:
        if arm is None or run["name"].rsplit("-s", 1)[0] == run_name(arm, minutes, 0).rsplit("-s", 1)[0]:
            groups.setdefault(run["name"].rsplit("-s", 1)[0], []).append(run)
    blimp = f"blimp{BLIMP_PER_PARADIGM}"
    lines = ["| arm | budget (min) | seeds | steps | CPU min | held-out MLM | plateau exit (CPU min) | "
             + " | ".join(f"{title} (first {BLIMP_PER_PARADIGM})" for _, title in BLIMP_COLUMNS) + " |",
             "|---|---|---|---|---|---|---|" + "---|" * len(BLIMP_COLUMNS)]
    for key, rs in groups.items():
        arm, minutes = key.rsplit("-m", 1)
        never = sum(r["plateau_exit_cpu_min"] is None for r in rs)
        exit_ = mean_sd([r["plateau_exit_cpu_min"] for r in rs], digits=1) + (f" ({never} never)" if never else "")
        if rs[0]["options"].get("instances") == "sentences":
            exit_ += " (held-out sentences)"            # the run's own evaluations: its held-out is single sentences
        scores = [mean_sd([r.get(blimp, {}).get(group) for r in rs], 100, 1) for group, _ in BLIMP_COLUMNS]
        lines.append(f"| {arm} | {minutes} | {len(rs)} | {mean_sd([r['plan']['steps'] for r in rs], digits=0)} | "
                     f"{mean_sd([r['cpu_s'] / 60 for r in rs], digits=1)} | "
                     f"{mean_sd([r['heldout_mlm'] for r in rs])} | {exit_} | " + " | ".join(scores) + " |")
    return "\n".join(lines)


def whole_blimp(results=RESULTS) -> str:
    """Markdown: every run scored on all of BLiMP, by phenomenon, mean ± sd over an arm's seeds,
    beside the counting baselines of its corpus and BLiMP's published figures (* trained on far
    more text: linguistics_results.PUBLISHED)."""
    from linguistics_results import PUBLISHED, PUBLISHED_MODELS
    runs = [json.load(open(os.path.join(results, f))) for f in sorted(os.listdir(results)) if f.endswith(".json")]
    runs = [r for r in runs if "blimp" in r]
    if not runs:
        return "(no run scored on all of BLiMP)"
    groups = {}
    for run in runs:
        groups.setdefault(run["name"].rsplit("-s", 1)[0], []).append(run)
    baselines = runs[-1]["blimp_baselines"]
    counters = sorted({k for v in baselines.values() for k in v})
    lines = ["| phenomenon | " + " | ".join(f"{k} ({len(v)} seed{'s' * (len(v) > 1)})" for k, v in groups.items())
             + " | " + " | ".join(counters) + " | " + " | ".join(f"{m}*" for m in PUBLISHED_MODELS) + " |",
             "|---|" + "---|" * (len(groups) + len(counters) + len(PUBLISHED_MODELS))]
    for key in [k for k in runs[-1]["blimp"] if k.split(":")[0] in ("overall", "phenomenon")]:
        name = key.split(":")[1]
        cells = [mean_sd([r["blimp"].get(key) for r in rs], 100, 1) for rs in groups.values()]
        cells += [f"{100 * baselines[key][c]:.1f}" if c in baselines.get(key, {}) else "-" for c in counters]
        cells += [f"{PUBLISHED[name][m]:.1f}" if m in PUBLISHED.get(name, {}) else "-" for m in PUBLISHED_MODELS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stage", choices=("run", "blimp", "summarize", "report"))
    p.add_argument("arms", nargs="*", help=f"run: which arms ({', '.join(ARMS)})")
    p.add_argument("--runs", default="runs/hour", help="every run, score and log under it (default runs/hour)")
    p.add_argument("--minutes", type=float, default=60.0, help="run: each run's --budget (default 60)")
    p.add_argument("--seeds", type=lambda text: [int(x) for x in text.split(",")], default=[0],
                   help="run: pretraining seeds, comma-separated (default 0)")
    p.add_argument("--steps", type=int, default=None,
                   help="run: this step count instead of planning --minutes (a plan recorded by an earlier seed)")
    p.add_argument("--jobs", type=int, default=2, help="runs side by side, one thread each (default 2)")
    p.add_argument("--blimp", default=None, help="blimp: BLiMP's data/ directory")
    p.add_argument("--results", default=RESULTS, help="summarize, report: the summaries' directory (default: "
                                                      "benchmarks/results/hour_recipe)")
    p.add_argument("--arm", default=None, help="report: only this arm, at --minutes")
    p.add_argument("--all", action="store_true", help="blimp: the hour's runs on all 67,000 pairs, with the "
                                                       "unigram and 3-gram of their corpus (~10 min of CPU each)")
    p.add_argument("--quick", action="store_true", help="run: 200 built-in stories instead of IMDB (a smoke test)")
    args = p.parse_args(argv)
    unknown = [a for a in args.arms if a not in ARMS]
    if unknown:
        p.error(f"unknown arm {unknown[0]!r}; choose from {', '.join(ARMS)}")
    r = Runner(args.runs, args.jobs)
    if args.stage == "run":
        for commands in prepare_commands(r, args.quick):
            r.run_all(commands)
        r.run_all(pretrain_commands(r, args.arms, args.minutes, args.seeds, args.steps))
    elif args.stage == "blimp":
        if not args.blimp:
            p.error("blimp needs --blimp DIR (BLiMP's data/)")
        r.run_all(blimp_commands(r, args.blimp, args.all))
    elif args.stage == "summarize":
        summarize(r, args.results)
    else:
        print(report(args.results, args.arm, args.minutes if args.arm else None))
        if args.arm is None:
            print("\n" + whole_blimp(args.results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
