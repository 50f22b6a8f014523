"""The figures of docs/linguistics.md: what very small BERTs pretrained by npbert learn of language,
over pretraining seeds, beside counting baselines and random-initialised controls.

    python benchmarks/linguistics_results.py --blimp ~/blimp/data              # every stage, 2 jobs at a time
    python benchmarks/linguistics_results.py --blimp ~/blimp/data report       # the tables from what is done
    python benchmarks/linguistics_results.py --quick                           # a smoke test (minutes)

BLiMP (Warstadt et al. 2020, CC BY) is not shipped: clone github.com/alexwarstadt/blimp and
give its data/ directory. Stages, each a list of `npbert` commands (printed as they start, one
process and one thread each, --jobs side by side), a command whose output exists is not run
again (an interrupted sweep continues):

    pretrain   the models: the default run (`npbert pretrain --seed S`: tiny, built-in corpus),
               a mini on the IMDB reviews at two budgets (--steps 1200 and 4800, peak lr 2e-3),
               and one at peak lr 1e-3 (docs/results.md's 12,000-step schedule stopped at step
               4,000: imdb-lr1e-3), seeds 0..2
    blimp      `npbert minimal-pairs` of every model on BLiMP and on the built-in pairs, beside
               unigram, 3-gram and a random-initialised BERT of its size (init seed = its seed);
               all of BLiMP in scores/blimp-*, its first N pairs a paradigm (--per-paradigm N)
               in scores/blimpN-*, and `report --per-paradigm N` reports those
    heads      `npbert attention-heads` of every IMDB mini (a picture for each one's seed 0)
    probes     `npbert probe` of the IMDB minis on rt-polarity and builtin-tagging, with the control
    finetune   `npbert finetune --task rt-polarity` from the 4,800-step and the lr-1e-3 minis and
               from scratch, 5 seeds, on all 6,824 training sentences and on the first 500
    report     the tables, as docs/linguistics.md shows them (mean +- sd over seeds)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONE_THREAD = {"NPBERT_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
SEEDS = (0, 1, 2)
FINETUNE_SEEDS = (0, 1, 2, 3, 4)
FINETUNE_LR = "3e-4"                   # docs/results.md's peak learning rate for rt-polarity
BUDGETS = (1200, 4800)                 # steps of 32 sequences of 128 tokens: ~15 min and ~1 h of one core
# docs/results.md's recipe that left the unigram stage (peak lr 1e-3, 1,200 warm-up steps of a 12,000-step
# schedule), stopped at step 4,000 (~1 h of one core): 0.255 held-out MLM there against 4,800 steps' 0.136
LOWER_LR = ["--steps", "12000", "--warmup-steps", "1200", "--learning-rate", "1e-3", "--stop-after", "4000"]
FINETUNED = ("imdb-4800", "imdb-lr1e-3")  # the minis the fine-tuning question is asked of
STAGES = ("pretrain", "blimp", "heads", "probes", "finetune", "report")
# BLiMP's published figures (github.com/alexwarstadt/blimp, raw_results/summary/models_summary.jsonl,
# the rows with UID "overall": by phenomenon, and "overall" for the whole set; human: the paper's
# Table 3, corrected version on arXiv). Trained on far more text than npbert's models: the n-gram
# and the LSTM on ~83M words of Wikipedia (Gulordava et al. 2018), GPT-2 on 40 GB of web text.
PUBLISHED = {"overall": {"5-gram": 61.2, "LSTM": 69.8, "GPT-2": 83.0, "human": 88.6},
             "anaphor_agreement": {"5-gram": 47.9, "LSTM": 91.7, "GPT-2": 99.3},
             "argument_structure": {"5-gram": 71.9, "LSTM": 73.2, "GPT-2": 81.8},
             "binding": {"5-gram": 64.4, "LSTM": 73.5, "GPT-2": 80.9},
             "control_raising": {"5-gram": 68.5, "LSTM": 67.0, "GPT-2": 81.9},
             "determiner_noun_agreement": {"5-gram": 70.1, "LSTM": 85.4, "GPT-2": 95.8},
             "ellipsis": {"5-gram": 36.9, "LSTM": 67.6, "GPT-2": 89.4},
             "filler_gap_dependency": {"5-gram": 60.2, "LSTM": 73.9, "GPT-2": 81.3},
             "irregular_forms": {"5-gram": 79.5, "LSTM": 89.1, "GPT-2": 91.9},
             "island_effects": {"5-gram": 57.2, "LSTM": 46.6, "GPT-2": 72.7},
             "npi_licensing": {"5-gram": 45.5, "LSTM": 51.7, "GPT-2": 76.8},
             "quantifiers": {"5-gram": 53.5, "LSTM": 64.5, "GPT-2": 79.0},
             "subject_verb_agreement": {"5-gram": 60.3, "LSTM": 80.1, "GPT-2": 86.4}}
PUBLISHED_MODELS = ("5-gram", "LSTM", "GPT-2", "human")
QUICK_STEPS = 40


ONLY = None                            # --models: the names the stages are limited to (None: all)
PER_PARADIGM = None                    # --per-paradigm: BLiMP's first N pairs a paradigm (None: all of it)


def blimp_tag(quick: bool) -> str:
    """The name BLiMP's scores go under: blimp (all 67,000 pairs) or blimpN (the first N a paradigm),
    so a sample and the whole set keep their own files in one --runs directory."""
    return f"blimp{PER_PARADIGM}" if PER_PARADIGM and not quick else "blimp"


def models(quick: bool) -> list:
    """(name, pretrain arguments after `--out DIR --seed S`) of every model the page reports."""
    if quick:
        return [("default", ["--steps", str(QUICK_STEPS), "--max-documents", "200", "--eval-every", "0"])]
    imdb = ["--data", "{runs}/data-imdb", "--preset", "mini"]
    every = [("default", [])] + [(f"imdb-{steps}", imdb + ["--steps", str(steps)]) for steps in BUDGETS]
    every.append(("imdb-lr1e-3", imdb + LOWER_LR))
    return [m for m in every if ONLY is None or m[0] in ONLY]


def minis(quick: bool) -> list:
    """The IMDB minis among the models (quick: the default model, the only one)."""
    return [m for m in models(quick) if m[0] != "default"] or models(quick)


class Runner:
    """Commands one thread each, `jobs` side by side; a command whose output exists is skipped."""

    def __init__(self, runs: str, jobs: int):
        self.runs, self.jobs = runs, jobs

    def run_all(self, commands) -> None:
        """commands: (output path, argv after `npbert`, log path); all must succeed."""
        todo = [c for c in commands if not os.path.exists(c[0])]
        with ThreadPoolExecutor(max(1, self.jobs)) as pool:
            for failure in pool.map(self.run_one, todo):
                if failure:
                    raise SystemExit(failure)

    def run_one(self, command):
        output, argv, log_path = command
        if argv[0] == "pretrain" and os.path.isdir(argv[argv.index("--out") + 1]):
            argv = argv + ["--resume"]                 # an interrupted run continues where it stopped
        print(f"npbert {' '.join(argv)}", flush=True)
        env = dict(os.environ, **ONE_THREAD, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        for directory in (os.path.dirname(log_path), os.path.dirname(output)):
            os.makedirs(directory, exist_ok=True)
        start = time.perf_counter()
        with open(log_path, "w") as log:
            proc = subprocess.Popen([sys.executable, "-m", "npbert.cli", *argv], stdout=log, stderr=subprocess.STDOUT,
                                    env=env)
            _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            return f"failed: npbert {' '.join(argv)} (see {log_path})"
        cost = {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": time.perf_counter() - start}
        if not os.path.exists(output):                 # a command that writes no file of its own: a marker
            with open(output, "w") as f:
                json.dump(cost, f)
        return None

    def path(self, *parts) -> str:
        return os.path.join(self.runs, *parts)


def checkpoint(r: Runner, name: str, seed: int) -> str:
    return r.path(f"{name}-s{seed}", "checkpoint")


def pretrain_commands(r: Runner, quick: bool) -> list:
    commands = []
    if not quick:
        commands.append((r.path("data-imdb", "manifest.json"), ["prepare", "--corpus", "imdb", "--out",
                                                               r.path("data-imdb")], r.path("logs", "prepare.log")))
    for name, extra in models(quick):
        for seed in (SEEDS[:1] if quick else SEEDS):
            out = r.path(f"{name}-s{seed}")
            argv = ["pretrain", "--out", out, "--seed", str(seed), *[a.format(runs=r.runs) for a in extra]]
            commands.append((r.path("done", f"pretrain-{name}-s{seed}.json"), argv,      # the marker of a whole run
                             r.path("logs", f"pretrain-{name}-s{seed}.log")))
    return commands


def blimp_commands(r: Runner, quick: bool, blimp: str | None, baselines: str = "unigram,ngram,random") -> list:
    """minimal-pairs of every model on BLiMP (its first PER_PARADIGM pairs of each paradigm, or all)
    and on the built-in pairs (all), beside `baselines` (minimal-pairs --baselines)."""
    per_paradigm = 20 if quick else PER_PARADIGM
    commands = []
    for name, _ in models(quick):
        for seed in (SEEDS[:1] if quick else SEEDS):
            for pairs, tag in ((blimp, blimp_tag(quick)), ("builtin", "builtin")):
                if pairs is None:
                    continue
                out = r.path("scores", f"{tag}-{name}-s{seed}.json")
                argv = ["minimal-pairs", checkpoint(r, name, seed), pairs, "--baselines", baselines,
                        "--seed", str(seed), "--json", out, "--scores", out.replace(".json", ".jsonl")]
                limit = ["--per-paradigm", str(per_paradigm)] if per_paradigm and (pairs == blimp or quick) else []
                commands.append((out, argv + limit,
                                 r.path("logs", f"{tag}-{name}-s{seed}.log")))
    return commands


def heads_commands(r: Runner, quick: bool) -> list:
    commands = []
    for name, _ in minis(quick):
        for seed in (SEEDS[:1] if quick else SEEDS):
            out = r.path("heads", f"{name}-s{seed}.json")
            argv = ["attention-heads", checkpoint(r, name, seed), "--json", out, "--sequences", "50" if quick else "500"]
            if seed == 0:
                argv += ["--plot", r.path("heads", f"{name}-s{seed}.png")]
            commands.append((out, argv, r.path("logs", f"heads-{name}-s{seed}.log")))
    return commands


def probe_commands(r: Runner, quick: bool) -> list:
    commands = []
    for name, _ in minis(quick):
        for seed in (SEEDS[:1] if quick else SEEDS):
            for task, limit in (("rt-polarity", None), ("builtin-tagging", "2000")):
                out = r.path("probes", f"{task}-{name}-s{seed}.json")
                argv = ["probe", checkpoint(r, name, seed), "--task", task, "--seed", str(seed), "--json", out]
                argv += ["--max-train-examples", "100" if quick else limit] if quick or limit else []
                commands.append((out, argv, r.path("logs", f"probe-{task}-{name}-s{seed}.log")))
    return commands


def finetuned(quick: bool) -> list:
    """The minis fine-tuned from (quick: the default model)."""
    return [m for m in minis(quick) if quick or m[0] in FINETUNED]


def finetune_commands(r: Runner, quick: bool, sources=None, scratch=None, learning_rate=FINETUNE_LR) -> list:
    """rt-polarity, peak lr 3e-4, dropout 0.1, the best dev epoch scored on test (docs/results.md's
    recipe), on all 6,824 training sentences and on the first 500. sources: {name: checkpoint
    directories by pretraining seed} (default: the minis'); fine-tuning seed k starts from the
    checkpoint of pretraining seed k mod their count. From scratch once a seed, a `scratch` preset
    model (default: the minis' size) with the first source's vocabulary (they share it).
    learning_rate: another peak learning rate (its runs' names say it: finetune_run_name)."""
    if sources is None:
        sources = {name: [checkpoint(r, name, s) for s in SEEDS] for name, _ in finetuned(quick)}
    scratch = scratch or ("tiny" if quick else "mini")
    commands = []
    for labels, epochs in ((None, "3"), ("500", "41")):
        for k in (FINETUNE_SEEDS[:1] if quick else FINETUNE_SEEDS):
            common = ["finetune", "--task", "rt-polarity", "--test", "test", "--learning-rate", learning_rate,
                      "--seed", str(k), "--epochs", "1" if quick else epochs]
            common += ["--max-train-examples", "200" if quick else labels] if quick or labels else []
            for i, (name, checkpoints) in enumerate(sources.items()):
                ckpt = checkpoints[k % len(checkpoints)]
                runs = [(finetune_run_name(f"pretrained-{name}", labels or "all", k, learning_rate),
                         ["--model", ckpt, "--hidden-dropout-prob", "0.1", "--attention-probs-dropout-prob", "0.1"])]
                if i == 0:
                    runs.append((finetune_run_name("scratch", labels or "all", k, learning_rate),
                                 ["--from-scratch", scratch, "--vocab", os.path.join(ckpt, "vocab.txt")]))
                for run, source in runs:
                    commands.append((r.path("done", f"finetune-{run}.json"),
                                     common + source + ["--out", r.path("finetune", run)],
                                     r.path("logs", f"finetune-{run}.log")))
    return commands


def finetune_run_name(side: str, labels: str, k: int, learning_rate=FINETUNE_LR) -> str:
    """A fine-tuning run's name: side 'pretrained-NAME' or 'scratch', labels 'all' or '500', seed k,
    and -lrX at the end when its peak learning rate is not the recipe's."""
    return f"{side}-n{labels}-s{k}" + ("" if learning_rate == FINETUNE_LR else f"-lr{learning_rate}")


# --- the report --------------------------------------------------------------------------------------

def mean_sd(values) -> str:
    values = [100 * v for v in values]
    if len(values) < 2:                        # no spread to give: one seed is its own figure
        return f"{values[0]:.1f}" if values else "-"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def load(path):
    with open(path) as f:
        return json.load(f)


def blimp_table(r: Runner, quick: bool, tag: str, level: str) -> list:
    """Markdown rows: a group per line, each model's BERT accuracy and the baselines beside, mean ± sd
    over seeds (the published figures where BLiMP has them)."""
    runs = {name: [load(p) for p in (r.path("scores", f"{tag}-{name}-s{s}.json") for s in SEEDS)
                   if os.path.exists(p)] for name, _ in models(quick)}
    runs = {n: v for n, v in runs.items() if v}
    if not runs:
        return []
    groups = [g["name"] for g in next(iter(runs.values()))[0]["groups"] if g["level"] == level]
    last = list(runs)[-1]
    columns = [(f"BERT {n} ({seeds(len(runs[n]))})", n, "bert") for n in runs]
    for label, scorer in (("random-init", "random"), ("unigram", "unigram"), ("3-gram", "3-gram")):
        # the last model that has the scorer (--baselines may leave it out), over its runs that have it
        owner = next((n for n in reversed(runs) if any(scored_by(run, scorer) for run in runs[n])), None)
        if owner:
            scored = sum(scored_by(run, scorer) for run in runs[owner])
            columns.append((label if scored == len(runs[owner]) else f"{label} ({seeds(scored)})", owner, scorer))
    published = tag.startswith("blimp") and level in ("overall", "phenomenon")
    head = ["group", "pairs"] + [c[0] for c in columns] + ([f"{m}*" for m in PUBLISHED_MODELS] if published else [])
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group in groups:
        cells = [group, str(pairs_of(runs[last][0], level, group))]
        for _, name, scorer in columns:
            cells.append(mean_sd([accuracy_of(run, level, group, scorer) for run in runs[name]
                                  if scored_by(run, scorer)]))
        if published:
            cells += [f"{PUBLISHED[group][m]:.1f}" if m in PUBLISHED.get(group, {}) else "-" for m in PUBLISHED_MODELS]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def scored_by(run, scorer: str) -> bool:
    return scorer in run["groups"][0]["accuracy"]          # every group has the same scorers


def seeds(n: int) -> str:
    return f"{n} seed{'s' * (n > 1)}"


def pairs_of(run, level, group) -> int:
    return next(g["pairs"] for g in run["groups"] if g["level"] == level and g["name"] == group)


def accuracy_of(run, level, group, scorer) -> float:
    return next(g["accuracy"][scorer] for g in run["groups"] if g["level"] == level and g["name"] == group)


def report(r: Runner, quick: bool) -> str:
    lines = []
    for tag in (blimp_tag(quick), "builtin"):
        for level in ("overall", "field", "phenomenon", "paradigm"):
            rows = blimp_table(r, quick, tag, level)
            if rows:
                lines += [f"\n{tag}, by {level} (accuracy %, mean ± sd over seeds)\n"] + rows
    lines += agreement_lines(r, quick)
    lines += costs_lines(r, quick) + probe_lines(r, quick) + finetune_lines(r, quick) + heads_lines(r, quick)
    return "\n".join(lines)


def agreement_lines(r: Runner, quick: bool) -> list:
    """How closely each BERT's paradigm accuracies follow each baseline's: Pearson's r over BLiMP's
    paradigms (the BERT's accuracy averaged over seeds), the question "does it score like a
    counter?" in one number a model."""
    lines = []
    for name, _ in models(quick):
        runs = [load(p) for p in (r.path("scores", f"{blimp_tag(quick)}-{name}-s{s}.json") for s in SEEDS)
                if os.path.exists(p)]
        if not runs:
            continue
        paradigms = [g["name"] for g in runs[0]["groups"] if g["level"] == "paradigm"]
        present = [scorer for scorer in ("bert", "random", "unigram", "3-gram")
                   if any(scored_by(run, scorer) for run in runs)]
        mean = {scorer: [statistics.mean(accuracy_of(run, "paradigm", g, scorer) for run in runs
                                         if scored_by(run, scorer)) for g in paradigms] for scorer in present}
        if len(set(mean["bert"])) < 2:                 # no spread: Pearson's r is undefined
            continue
        cells = [f"{scorer} {statistics.correlation(mean['bert'], mean[scorer]):+.2f}"
                 for scorer in present[1:] if len(set(mean[scorer])) > 1]
        lines.append(f"\n{blimp_tag(quick)}, {name}: Pearson's r of the BERT's {len(paradigms)} paradigm accuracies with "
                     + ", ".join(cells))
    return lines


def costs_lines(r: Runner, quick: bool) -> list:
    lines = ["\nscoring cost of the BERT on BLiMP (one thread): CPU minutes, tokens/s, GFLOP/s"]
    for name, _ in models(quick):
        for s in SEEDS:
            path = r.path("scores", f"{blimp_tag(quick)}-{name}-s{s}.json")
            if os.path.exists(path):
                c = load(path)["costs"]["bert"]
                lines.append(f"  {name}-s{s}: {c['cpu_seconds'] / 60:.1f} min, {c['copies']:,} copies, "
                             f"{c['tokens'] / c['cpu_seconds']:,.0f} tokens/s, {c['flops'] / c['cpu_seconds'] / 1e9:.1f}")
    return lines


def probe_lines(r: Runner, quick: bool) -> list:
    """A table per model and task: test accuracy per layer, pretrained beside its random-init control."""
    lines = []
    for name, _ in minis(quick):
        for task in ("rt-polarity", "builtin-tagging"):
            runs = [load(p) for p in (r.path("probes", f"{task}-{name}-s{s}.json") for s in SEEDS) if os.path.exists(p)]
            if not runs:
                continue
            lines += [f"\nprobe {task}, {name} ({len(runs)} seed{'s' * (len(runs) > 1)}): test accuracy % per layer, "
                      f"mean ± sd over seeds (majority class {100 * runs[0]['majority'][2]:.1f})\n",
                      "| layer | pretrained | random-init control |", "|---|---|---|"]
            for i in range(len(runs[0]["layers"]["pretrained"])):
                cells = [mean_sd([run["layers"][m][i]["test_accuracy"] for run in runs])
                         for m in ("pretrained", "random-init")]
                lines.append(f"| {i} | {cells[0]} | {cells[1]} |")
    return lines


def finetune_lines(r: Runner, quick: bool, names=None) -> list:
    """A table: dev (the best epoch) and test accuracy from each pretrained model (default: the
    minis) and from scratch, and the test gain paired by fine-tuning seed (only the seeds both sides
    have run)."""
    results = finetune_results(r, names or [name for name, _ in finetuned(quick)])
    return finetune_table(results)


def finetune_results(r: Runner, names, learning_rates=(FINETUNE_LR,)) -> dict:
    """{run: (best dev accuracy, its test accuracy)} of every finished fine-tuning run of `names` and
    scratch, at each of learning_rates."""
    runs = [finetune_run_name(side, labels, k, lr) for side in [f"pretrained-{n}" for n in names] + ["scratch"]
            for labels in ("all", "500") for k in FINETUNE_SEEDS for lr in learning_rates]
    results = {run: finetune_result(r.path("finetune", run, "metrics.jsonl")) for run in runs}
    return {run: v for run, v in results.items() if v}


def finetune_table(results: dict) -> list:
    """finetune_results' runs at the recipe's learning rate as markdown (the pretrained models in the
    order they come)."""
    rows = []
    for name in pretrained_names(results):
        for labels in ("all", "500"):
            gap = paired_gains(results, name, labels)
            if not gap:
                continue
            cells = [f"{mean_sd(accuracies)} ({len(accuracies)})"
                     for side in (f"pretrained-{name}", "scratch") for accuracies in side_accuracies(results, side, labels)]
            rows.append(f"| {name} | {labels} | " + " | ".join(cells) +
                        f" | {mean_sd(gap)} | {sum(g > 0 for g in gap)} of {len(gap)} |")
    head = ["\nrt-polarity fine-tuned (accuracy %, mean ± sd (seeds); the gain paired by fine-tuning seed)\n",
            "| pretrained | training sentences | pretrained dev | pretrained test | from scratch dev | "
            "from scratch test | test gain | pretrained ahead |", "|---|---|---|---|---|---|---|---|"]
    return head + rows if rows else []


def pretrained_names(results: dict) -> list:
    """The pretrained models finetune_results' runs start from, in the order they come."""
    return list(dict.fromkeys(run[len("pretrained-"):].rsplit("-n", 1)[0] for run in results
                              if run.startswith("pretrained-")))


def side_accuracies(results: dict, side: str, labels: str, learning_rate=FINETUNE_LR) -> tuple:
    """([best dev accuracy], [its test accuracy]) of one side's runs (side as finetune_run_name's), by seed."""
    runs = [results[key] for k in FINETUNE_SEEDS if (key := finetune_run_name(side, labels, k, learning_rate)) in results]
    return [dev for dev, _ in runs], [test for _, test in runs]


def paired_gains(results: dict, name: str, labels: str, learning_rates=(FINETUNE_LR, FINETUNE_LR)) -> list:
    """Test accuracy from pretrained model `name` minus from scratch, by fine-tuning seed, over the seeds
    both sides have (finetune_results' runs; labels "all" or "500"); learning_rates: the pretrained
    side's and the scratch side's."""
    pretrained, scratch = learning_rates
    keys = [(finetune_run_name(f"pretrained-{name}", labels, k, pretrained), finetune_run_name("scratch", labels, k, scratch))
            for k in FINETUNE_SEEDS]
    return [results[a][1] - results[b][1] for a, b in keys if a in results and b in results]


def finetune_result(path):
    """(best dev accuracy, test accuracy of the best dev epoch) of a finished run, or None."""
    if not os.path.exists(path):
        return None
    rows = [json.loads(line) for line in open(path) if line.strip()]
    test = [x["accuracy"] for x in rows if x["kind"] == "test"]
    return (max(x["accuracy"] for x in rows if x["kind"] == "eval"), test[0]) if test else None


def heads_lines(r: Runner, quick: bool) -> list:
    lines = []
    for name, _ in minis(quick):
        for s in SEEDS:
            path = r.path("heads", f"{name}-s{s}.json")
            if os.path.exists(path):
                named = load(path)["named"]
                lines.append(f"\n{name}-s{s}: {len(named)} named heads" + "".join(
                    f"\n  layer {layer} head {head}: {what}" for layer, head, what in named))
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stages", nargs="*", default=list(STAGES),
                   help=f"which stages, in order (default: all): {', '.join(STAGES)}")
    p.add_argument("--runs", default="runs/linguistics", help="every model, score and log under it")
    p.add_argument("--blimp", default=None, help="BLiMP's data/ directory (its 67 .jsonl files)")
    p.add_argument("--jobs", type=int, default=2, help="commands side by side, one thread each (default 2)")
    p.add_argument("--quick", action="store_true", help="one seed of a 40-step default run, 20 pairs a paradigm")
    p.add_argument("--seeds", type=lambda text: [int(x) for x in text.split(",")], default=None,
                   help="pretraining seeds the stages run for, comma-separated (default: 0,1,2)")
    p.add_argument("--per-paradigm", type=int, default=None, metavar="N",
                   help="score the first N pairs of each BLiMP paradigm (default: all 1,000); their scores and "
                        "report are blimpN's, all of BLiMP's blimp's")
    p.add_argument("--baselines", default="unigram,ngram,random",
                   help="the blimp stage's scorers beside each BERT, as minimal-pairs --baselines takes them "
                        "(default unigram,ngram,random; leaving out random halves the stage's time)")
    p.add_argument("--models", default=None,
                   help="run the stages for these models only, comma-separated: default, imdb-1200, imdb-4800, "
                        "imdb-lr1e-3")
    args = p.parse_args(argv)
    global ONLY, SEEDS, PER_PARADIGM
    PER_PARADIGM = args.per_paradigm
    ONLY = None if args.models is None else args.models.split(",")
    SEEDS = tuple(args.seeds) if args.seeds else SEEDS
    unknown = [s for s in args.stages if s not in STAGES]
    if unknown:
        p.error(f"unknown stage {unknown[0]!r}; choose from {', '.join(STAGES)}")
    r = Runner(args.runs, args.jobs)
    for stage in args.stages:
        if stage == "pretrain":
            r.run_all(pretrain_commands(r, args.quick))
        elif stage == "blimp":
            r.run_all(blimp_commands(r, args.quick, args.blimp, args.baselines))
        elif stage == "heads":
            r.run_all(heads_commands(r, args.quick))
        elif stage == "probes":
            r.run_all(probe_commands(r, args.quick))
        elif stage == "finetune":
            r.run_all(finetune_commands(r, args.quick))
        else:
            print(report(r, args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
