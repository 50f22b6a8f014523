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
import filecmp
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]                            # linguistics_results.py, and this checkout's npbert

from linguistics_results import FINETUNE_LR, Runner  # noqa: E402  (one-thread commands, side by side)

RESULTS = os.path.join(ROOT, "benchmarks", "results", "hour_recipe")
PLATEAU_EXIT = 0.2                       # held-out MLM accuracy: past the unigram plateau (~0.13)
BLIMP_PER_PARADIGM = 20
FINETUNE_LRS = ("1e-4", FINETUNE_LR, "1e-3")   # rt-polarity's peak learning rates: each side's best on dev

# Each arm: npbert pretrain's options beyond --data and --budget, every knob the recipes differ in
# given (a corpus's defaults are the hour recipe's: npbert/pretraining/pretrain_options.py).
OLD = {"size": ["--preset", "mini"], "nsp": ["--nsp"], "lr": ["--learning-rate", "2e-3"],
       "warmup": ["--warmup-proportion", "0.25"]}        # docs/linguistics.md's IMDB minis
HOUR = {"size": ["--preset", "tiny"], "nsp": ["--no-nsp"], "lr": ["--learning-rate", "1e-3"],
        "warmup": ["--warmup-proportion", "0.06"]}       # the hour recipe at T 128 throughout (tiny-mlm)
CHANGES = {"size": ("mini", "tiny"), "nsp": ("nsp", "no-nsp"), "lr": ("lr2e-3", "lr1e-3"),
           "warmup": ("warmup25", "warmup6")}            # each knob's old and new value, as arm names say it


def recipe(base: dict, *swapped) -> list:
    """base's options, the knobs named in swapped taken from the other recipe."""
    other = HOUR if base is OLD else OLD
    return [a for knob in base for a in (other if knob in swapped else base)[knob]]


SAME_VOCAB = ["--vocab", "{runs}/data-imdb/vocab.txt"]
DATA = {                                 # prepared data: `npbert prepare --corpus imdb` options beyond --out
    "data-imdb": [],
    "data-imdb-sentences": ["--instances", "sentences", *SAME_VOCAB],
    "data-imdb-t64": ["--max-seq-length", "64", *SAME_VOCAB],
    "data-imdb-mask100": ["--mask-mix", "100/0/0", *SAME_VOCAB],
    "data-imdb-masked25": ["--masked-lm-prob", "0.25", "--max-predictions-per-seq", "32", *SAME_VOCAB],
}


def on(data: str) -> list:
    """An arm's options to train on the prepared data named (one of DATA)."""
    return ["--data", f"{{runs}}/{data}"]


SHORT = ["--short-data", "{runs}/data-imdb-t64"]     # the first 90 % of the steps at T 64 (pretraining.md)

ARMS = {
    "old": recipe(OLD),
    "tiny-mlm": recipe(HOUR),
    # the ablation (Cramming's table): each change alone from the old recipe, each taken from the hour's
    **{f"old+{CHANGES[knob][1]}": recipe(OLD, knob) for knob in OLD},
    **{f"hour-{CHANGES[knob][0]}": recipe(HOUR, knob) for knob in HOUR},
    "mini-mlm-b16": recipe(HOUR, "size") + ["--batch-size", "16"],
    "tiny-sentences": recipe(HOUR) + on("data-imdb-sentences"),
    "mini-sentences": recipe(HOUR, "size") + on("data-imdb-sentences"),
    # the knobs screened one at a time on the hour recipe
    "hour+dropout": recipe(HOUR) + ["--hidden-dropout-prob", "0.1", "--attention-probs-dropout-prob", "0.1"],
    "hour+b16": recipe(HOUR) + ["--batch-size", "16"],
    "hour+b64": recipe(HOUR) + ["--batch-size", "64"],
    "hour+t64": recipe(HOUR) + on("data-imdb-t64"),
    "hour+mask100": recipe(HOUR) + on("data-imdb-mask100"),
    "hour+masked25": recipe(HOUR) + on("data-imdb-masked25"),
    # the BERT paper's short sequences first: 90 % of the steps at T 64, the last 10 % at 128, the
    # positions 64-127 starting as copies of 0-63 (random: as initialized)
    "hour+short64": recipe(HOUR) + SHORT,
    "hour+short64-random": recipe(HOUR) + SHORT + ["--new-positions", "random"],
    # the ablation from the final recipe: each change undone alone in it, and the short phase alone in the old
    **{f"recipe-{CHANGES[knob][0]}": recipe(HOUR, knob) + SHORT for knob in HOUR},
    "old+short64": recipe(OLD) + SHORT,
}
RECIPE = "hour+short64"                   # the arm a corpus's defaults run (CORPUS_RECIPE): the page's recipe
ABLATION_MINUTES = 10                     # each ablation run's budget: a screen, two runs side by side


def group_name(arm: str, minutes: float) -> str:
    """An arm at a budget, the name its seeds' runs share (a row of the tables)."""
    return f"{arm}-m{minutes:g}"


def run_name(arm: str, minutes: float, seed: int) -> str:
    return f"{group_name(arm, minutes)}-s{seed}"


def group_of(run: str) -> str:
    """ARM-mMINUTES-sSEED -> ARM-mMINUTES."""
    return run.rsplit("-s", 1)[0]


QUICK = ["--corpus", "builtin", "--max-documents", "200",   # --quick: the pipeline end to end in seconds,
         "--max-seq-length", "128"]                           # at IMDB's lengths (data-imdb-t64: 64)


def prepare_commands(r: Runner, arms, quick: bool) -> list:
    """The data the arms train on, data-imdb first (the held-out set of every row; the others take
    its vocabulary)."""
    corpus = QUICK if quick else ["--corpus", "imdb"]
    wanted = {"data-imdb"} | {data for arm in arms for data in reads(arm)}
    return [[(r.path(name, "manifest.json"), ["prepare", *corpus, "--out", r.path(name),
                                              *[a.format(runs=r.runs) for a in extra]], r.path("logs", f"{name}.log"))]
            for name, extra in DATA.items() if name in wanted]


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


SNAPSHOT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt")


def run_with_snapshots(r: Runner, command, every: int, steps: int) -> None:
    """One run in segments of `every` steps (--stop-after, then --resume: the same run to the bit),
    the model at the end of each kept as snapshots/NAME/step-NNNNN for the learning curve (beside
    the run: npbert writes into no directory of a run but its own); the run's
    marker's CPU and wall time are the segments' sums."""
    import shutil
    marker, argv, log = command
    if os.path.exists(marker):
        return
    out = argv[argv.index("--out") + 1]
    costs = []
    for stop in [*range(every, steps, every), steps]:
        part = r.path("snapshots", os.path.basename(out), f"step-{stop:05d}.json")    # the segment's cost
        last = stop == steps
        segment = argv if last else [*argv, "--stop-after", str(stop)]
        failure = not os.path.exists(part) and r.run_one((part, segment, log[:-len(".log")] + f"-step-{stop:05d}.log"))
        if failure:
            raise SystemExit(failure)
        snapshot = part[:-len(".json")]
        if not os.path.isdir(snapshot):
            os.makedirs(snapshot + ".partial", exist_ok=True)
            for name in SNAPSHOT_FILES:
                shutil.copy2(os.path.join(out, "checkpoint", name), snapshot + ".partial")
            os.replace(snapshot + ".partial", snapshot)
        with open(part) as f:
            costs.append(json.load(f))
    os.makedirs(os.path.dirname(marker), exist_ok=True)
    with open(marker, "w") as f:
        json.dump({k: sum(c[k] for c in costs) for k in ("cpu_s", "wall_s")}, f)


def planned_steps(results: str, arm: str, minutes: float, seed: int) -> int:
    """The step count the run ARM-mMINUTES-sSEED trained for (its summary's plan)."""
    path = os.path.join(results, run_name(arm, minutes, seed) + ".json")
    if not os.path.exists(path):
        raise LookupError(f"--plan-of {seed}: no summary {path} (run and summarize that seed first)")
    with open(path) as f:
        return json.load(f)["plan"]["steps"]


# The page's promise, run as a user would: a corpus's defaults and an hour, no other option.
ANEW = ["pretrain", "--corpus", "imdb", "--budget", "60"]


def anew_command(r: Runner, quick: bool) -> tuple:
    """ANEW into RUNS/anew/run (quick: 200 built-in stories for 0.2 minutes); its marker anew/done.json."""
    argv = ANEW if not quick else ["pretrain", "--corpus", "builtin", "--max-documents", "200", "--budget", "0.2"]
    return r.path("anew", "done.json"), [*argv, "--out", r.path("anew", "run")], r.path("logs", "anew.log")


def anew_summary(r: Runner) -> dict:
    """The run anew: its plan, cost and final held-out MLM, on its own held-out split (its seed's: a
    run prepared by pretrain --corpus splits the documents by the run's seed, so the standard
    held-out set of the other rows is partly its training text)."""
    with open(r.path("anew", "done.json")) as f:
        cost = json.load(f)
    metrics = records(r.path("anew", "run", "metrics.jsonl"))
    [plan] = [m for m in metrics if m["kind"] == "budget"]
    [final] = [m for m in metrics if m["kind"] == "final"]
    with open(r.path("anew", "run", "data", "manifest.json")) as f:
        pairs = json.load(f)["splits"]["heldout"]["counts"]["instances"]
    with open(r.path("anew", "run", "checkpoint", "training_state.json")) as f:
        options = json.load(f)["options"]
    return dict(options=options, steps=plan["steps"], cpu_s=cost["cpu_s"], wall_s=cost["wall_s"],
                heldout_mlm=final["mlm_acc"], heldout_pairs=pairs)


def anew_report(results=RESULTS) -> str:
    """One line: the run anew against the recipe's rows' held-out MLM."""
    path = os.path.join(results, "anew", "pretrain.json")
    if not os.path.exists(path):
        return "(no run anew summarized)"
    with open(path) as f:
        a = json.load(f)
    hour = [r["heldout_mlm"] for r in load_runs(results).get(group_name(RECIPE, 60), [])]
    against = (f" against the recipe's rows' {mean_sd(hour)}: {abs(a['heldout_mlm'] - statistics.mean(hour)):.3f} apart"
               if hour else "")
    return (f"`npbert pretrain --corpus {a['options']['corpus']} --budget {a['options']['budget']:g}`: "
            f"{a['steps']:,} steps planned, {a['cpu_s'] / 60:.1f} CPU min, "
            f"{a['wall_s'] / 60:.1f} min of wall time; held-out MLM {a['heldout_mlm']:.3f} on its own "
            f"{a['heldout_pairs']:,} held-out pairs{against}")


def replay(r: Runner, arm: str, minutes: float, seed: int, upto: int, results: str, every: int | None = None) -> None:
    """Run ARM-mMINUTES-sSEED again with the step count its budget planned (--steps: the run's
    recorded plan) to step `upto`, and compare its training and held-out records to then with the
    run's own (tokens/s aside), and at the last step its model file byte for byte: written to
    RESULTS/replay/NAME.json. With `every`, the replay goes to the end in segments and keeps its
    models as the run's snapshots (run_with_snapshots: the same run, so the run's learning curve)."""
    name = run_name(arm, minutes, seed)
    plan = run_plan(r, name)["steps"]
    upto = plan if every else upto
    with open(r.path("done", f"{name}.json")) as f:        # held-out pairs of its own to a step: training alone
        kinds = ("train",) if "curve_heldout" in json.load(f) else ("train", "eval")
    [(_, argv, _)] = pretrain_commands(r, [arm], minutes, [seed], steps=plan)
    out = r.path("replay", name)
    argv[argv.index("--out") + 1] = out
    command = (r.path("replay", f"{name}-upto-{upto}.json"), argv, r.path("logs", f"replay-{name}.log"))
    if every:
        run_with_snapshots(r, command, every, plan)
    else:
        r.run_all([(command[0], [*argv, "--stop-after", str(upto)], command[2])])

    def upto_step(path):
        return [{k: v for k, v in m.items() if k != "tokens_per_s"} for m in records(path)
                if m["kind"] in kinds and m["step"] <= upto]
    own, again = upto_step(r.path(name, "metrics.jsonl")), upto_step(os.path.join(out, "metrics.jsonl"))
    if not own:
        raise SystemExit(f"replay: {name} has no training or held-out record to step {upto}: nothing to compare")
    differ = next((i for i, (a, b) in enumerate(zip(own, again)) if a != b), None)
    model = [os.path.join(d, "checkpoint", "model.safetensors") for d in (r.path(name), out)]
    same_model = filecmp.cmp(*model, shallow=False) if upto == plan else None
    write_json(os.path.join(results, "replay", f"{name}.json"),
               dict(name=name, steps=plan, seed=seed, upto=upto, records=len(own), kinds=kinds,
                    identical=own == again, first_difference=None if differ is None else [own[differ], again[differ]],
                    same_model=same_model))


def replay_report(results=RESULTS) -> str:
    """A line for each replayed run: its recorded step count, given again, against the run."""
    root = os.path.join(results, "replay")
    lines = []
    for f in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        with open(os.path.join(root, f)) as file:
            a = json.load(file)
        verdict = ("identical, to the last bit of every float" if a["identical"]
                   else f"different, first at {a['first_difference'][0]}")
        what = "training and held-out" if "eval" in a.get("kinds", ("train", "eval")) else "training"
        model = ("" if a.get("same_model") is None else
                 "; its final model file " + ("the same, byte for byte" if a["same_model"] else "different"))
        lines.append(f"`--steps {a['steps']} --seed {a['seed']}` to step {a['upto']:,}: its {a['records']} {what} "
                     f"records against {a['name']}'s: {verdict}{model}")
    return "\n".join(lines) or "(no run replayed)"


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


def snapshots(r: Runner, name: str) -> list:
    """(step, directory) of every model kept of run `name` (run --snapshots), in step order."""
    root = r.path("snapshots", name)
    steps = sorted(d for d in os.listdir(root) if d.startswith("step-") and d[5:].isdigit()) if os.path.isdir(root) else []
    return [(int(d[5:]), os.path.join(root, d)) for d in steps]


def curve_commands(r: Runner, blimp: str) -> list:
    """Every kept model on BLiMP's first 20 pairs a paradigm, and its attention heads on held-out text."""
    commands = []
    for name in finished_runs(r):
        for step, snapshot in snapshots(r, name):
            scores = r.path("scores", "curve", name, f"blimp{BLIMP_PER_PARADIGM}-step-{step:05d}.json")
            heads = r.path("scores", "curve", name, f"heads-step-{step:05d}.json")
            commands += [(scores, ["minimal-pairs", snapshot, blimp, "--per-paradigm", str(BLIMP_PER_PARADIGM),
                                   "--baselines", "none", "--json", scores], scores[:-len(".json")] + ".log"),
                         (heads, ["attention-heads", snapshot, "--data", r.path("data-imdb"), "--json", heads],
                          heads[:-len(".json")] + ".log")]
    return commands


PROBES = (("rt-polarity", None), ("builtin-tagging", "2000"))   # docs/linguistics.md's probes: task, training sentences
HEADS_PICTURE = os.path.join(ROOT, "docs", "hour_heads.png")


def heads_commands(r: Runner, arm: str, minutes: float, picture: str) -> list:
    """`npbert attention-heads` of each finished run of the arm on held-out IMDB pairs (as the
    curve scores them), the first seed's drawn to `picture`."""
    commands = []
    for i, name in enumerate(runs_of(r, arm, minutes)):
        out = r.path("scores", f"heads-{name}.json")
        argv = ["attention-heads", r.path(name, "checkpoint"), "--data", r.path("data-imdb"), "--json", out]
        commands.append((out, argv + (["--plot", picture] if i == 0 else []), r.path("logs", f"heads-{name}.log")))
    return commands


def probe_commands(r: Runner, arm: str, minutes: float, quick: bool) -> list:
    """`npbert probe` of each finished run of the arm on docs/linguistics.md's two tasks, beside the
    random-initialised control of the same seed (quick: 100 training sentences)."""
    commands = []
    for name in runs_of(r, arm, minutes):
        seed = name.rsplit("-s", 1)[1]
        for task, limit in PROBES:
            out = r.path("scores", f"probe-{task}-{name}.json")
            argv = ["probe", r.path(name, "checkpoint"), "--task", task, "--seed", seed, "--json", out]
            limit = "100" if quick else limit
            commands.append((out, argv + (["--max-train-examples", limit] if limit else []),
                             r.path("logs", f"probe-{task}-{name}.log")))
    return commands


def runs_of(r: Runner, arm: str, minutes: float) -> list:
    """The finished runs of `arm` at `minutes`, by seed (the models heads, probes and fine-tuning read)."""
    return [name for name in finished_runs(r) if group_of(name) == group_name(arm, minutes)]


def finetune_commands(r: Runner, arm: str, minutes: float, quick: bool) -> list:
    """rt-polarity from each finished run of the arm (fine-tuning seed k from its k mod n-th) and from
    scratch at the same size, as docs/linguistics.md fine-tunes its minis (linguistics_results), at
    each of FINETUNE_LRS (quick: the recipe's alone)."""
    from linguistics_results import finetune_commands as sweep
    names = runs_of(r, arm, minutes)
    if not names:
        raise SystemExit(f"finetune: no finished run of {arm} at {minutes:g} minutes under {r.runs}")
    preset = ARMS[arm][ARMS[arm].index("--preset") + 1]
    return [c for lr in ((FINETUNE_LR,) if quick else FINETUNE_LRS)
            for c in sweep(r, quick, {group_name(arm, minutes): [r.path(n, "checkpoint") for n in names]},
                           scratch=preset, learning_rate=lr)]


def finished_runs(r: Runner) -> list:
    """The runs whose pretraining ended (the runner's marker with their CPU and wall time)."""
    done = r.path("done")
    return sorted(f[:-len(".json")] for f in os.listdir(done)
                  if not f.startswith("finetune-")) if os.path.isdir(done) else []


def records(path) -> list:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def cpu_minute_of(cost, steps):
    """step -> the CPU minute at its end, evaluations included: in proportion to the steps, or
    phase by phase where the run's marker times its phases ([last step, CPU seconds] each: a run
    made in two invocations, short then long sequences)."""
    phases = cost.get("phases") or [[steps, cost["cpu_s"]]]

    def at(step):
        done, start = 0.0, 0
        for end, seconds in phases:
            if step <= end:
                return (done + seconds * (step - start) / (end - start)) / 60
            done, start = done + seconds, end
        return done / 60
    return at


def run_plan(r: Runner, name: str) -> dict:
    """The run's budget plan; a run given --steps (a screen before --budget existed, a run made in
    two invocations) has its count."""
    plan = next((m for m in records(r.path(name, "metrics.jsonl")) if m["kind"] == "budget"), None)
    if plan is None:
        with open(r.path(name, "checkpoint", "training_state.json")) as f:
            plan = dict(steps=json.load(f)["options"]["steps"])
    return plan


def summary(r: Runner, name: str, before=None) -> dict:
    """One finished run as the small JSON the tables are made from. before: its summary written
    earlier, whose standard held-out MLM is kept when the run is the same (its CPU time and final
    evaluation), instead of scoring the 4,001 pairs again."""
    with open(r.path("done", f"{name}.json")) as f:
        cost = json.load(f)
    metrics = records(r.path(name, "metrics.jsonl"))
    with open(r.path(name, "checkpoint", "training_state.json")) as f:
        options = json.load(f)["options"]
    plan = run_plan(r, name)
    [final] = [m for m in metrics if m["kind"] == "final"]
    cpu_min = cpu_minute_of(cost, plan["steps"])
    curve = [dict(step=m["step"], cpu_min=round(cpu_min(m["step"]), 2), mlm_acc=m["mlm_acc"])
             for m in metrics if m["kind"] == "eval"]
    exit_ = next((c["cpu_min"] for c in curve if c["mlm_acc"] > PLATEAU_EXIT), None)
    out = dict(name=name, arm=name.rsplit("-m", 1)[0], options=options, plan=plan, cpu_s=cost["cpu_s"],
               wall_s=cost["wall_s"], heldout_mlm=None, own_heldout_mlm=final["mlm_acc"],
               plateau_exit_cpu_min=exit_, curve=curve, **{k: cost[k] for k in ("curve_heldout",) if k in cost})
    same = before and (before["cpu_s"], before["own_heldout_mlm"]) == (out["cpu_s"], out["own_heldout_mlm"])
    out["heldout_mlm"] = before["heldout_mlm"] if same else standard_heldout_mlm(r, name)
    kept = [curve_point(r, name, step, cpu_min(step)) for step, _ in snapshots(r, name)]
    if kept:
        out["snapshots"] = [k for k in kept if k]
    heads = r.path("scores", f"heads-{name}.json")
    if os.path.exists(heads):
        with open(heads) as f:
            h = json.load(f)
        out["heads"] = dict(named=h["named"], broad=h["broad"], **strongest_heads(h))
    for task, _ in PROBES:
        probe = r.path("scores", f"probe-{task}-{name}.json")
        if os.path.exists(probe):
            with open(probe) as f:
                pr = json.load(f)
            out.setdefault("probes", {})[task] = dict(
                majority=pr["majority"][2], **{model: [layer["test_accuracy"] for layer in layers]
                                                for model, layers in pr["layers"].items()})
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


def curve_point(r: Runner, name: str, step: int, cpu_min: float):
    """What the model kept at `step` knows: BLiMP (first 20 a paradigm) overall and by phenomenon,
    and its strongest previous-token and next-token heads (their attention's mean share); None
    until both are scored (the curve stage)."""
    scores = r.path("scores", "curve", name, f"blimp{BLIMP_PER_PARADIGM}-step-{step:05d}.json")
    heads = r.path("scores", "curve", name, f"heads-step-{step:05d}.json")
    if not (os.path.exists(scores) and os.path.exists(heads)):
        return None
    with open(scores) as f:
        groups = json.load(f)["groups"]
    with open(heads) as f:
        best = strongest_heads(json.load(f))
    return dict(step=step, cpu_min=round(cpu_min, 2), **best,
                blimp={f"{g['level']}:{g['name']}": g["accuracy"]["bert"] for g in groups
                       if g["level"] in ("overall", "phenomenon")})


def strongest_heads(heads: dict) -> dict:
    """{previous, next}: the largest mean share of a query's attention on that token, over every head
    (`npbert attention-heads --json`)."""
    column = {stat: heads["statistics"].index(stat) for stat in ("previous", "next")}
    return {stat: max(head[i] for layer in heads["means"] for head in layer) for stat, i in column.items()}


def standard_heldout_mlm(r: Runner, name: str) -> float:
    """MLM accuracy over all of data-imdb's held-out pairs (T 128, 80/10/10), whatever the run trained on."""
    from npbert.checkpoint import load_pretrained
    from npbert.pretraining.recipe import evaluate, load_prepared
    loaded = load_pretrained(r.path(name, "checkpoint"))
    _, heldout = load_prepared(r.path("data-imdb"))
    return evaluate(loaded.params, loaded.config, heldout, 32, nsp=False)["mlm_acc"]


def write_json(path: str, value) -> None:
    """value, made whole by the caller, as indented JSON replacing path in one step (npbert.atomic)."""
    from npbert.atomic import atomic_write
    os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic_write(path, lambda f: f.write((json.dumps(value, indent=1) + "\n").encode()))
    print(f"wrote {path}")


def summarize(r: Runner, results: str) -> None:
    for name in finished_runs(r):
        path = os.path.join(results, f"{name}.json")
        before = None
        if os.path.exists(path):
            with open(path) as f:
                before = json.load(f)
        write_json(path, summary(r, name, before))
    if os.path.exists(r.path("anew", "done.json")):
        write_json(os.path.join(results, "anew", "pretrain.json"), anew_summary(r))
    from linguistics_results import finetune_results
    tuned = finetune_results(r, sorted({group_of(name) for name in finished_runs(r)}), FINETUNE_LRS)
    if tuned:
        write_json(tuned_path(results), tuned)


def tuned_path(results: str) -> str:
    """The summary of every rt-polarity fine-tuning run (finetune_results')."""
    return os.path.join(results, "finetune", "rt-polarity.json")


def load_tuned(results: str):
    """{run: [best dev accuracy, its test accuracy]} of the fine-tuning summary, or None before one."""
    if not os.path.exists(tuned_path(results)):
        return None
    with open(tuned_path(results)) as f:
        return json.load(f)


def mean_of(values):
    """The mean of the values given (None: not measured), or None."""
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def mean_sd(values, scale=1.0, digits=3) -> str:
    values = [v * scale for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


BLIMP_COLUMNS = (("overall:overall", "BLiMP"), ("phenomenon:determiner_noun_agreement", "det.-noun"),
                 ("phenomenon:subject_verb_agreement", "subj.-verb"))


def load_runs(results=RESULTS) -> dict:
    """{ARM-mMINUTES: its runs' summaries, by seed} of every summary in `results`."""
    groups = {}
    for f in sorted(os.listdir(results)):
        if f.endswith(".json"):
            with open(os.path.join(results, f)) as file:
                run = json.load(file)
            groups.setdefault(group_of(run["name"]), []).append(run)
    return groups


def report(results=RESULTS, arm=None, minutes=None) -> str:
    """Markdown: a row per arm and budget (or only `arm` at `minutes`), mean ± sd over its seeds."""
    groups = {key: rs for key, rs in load_runs(results).items()
              if arm is None or key == group_name(arm, minutes)}
    blimp = f"blimp{BLIMP_PER_PARADIGM}"
    lines = ["| arm | budget (min) | seeds | steps | CPU min | held-out MLM | plateau exit (CPU min) | "
             + " | ".join(f"{title} (first {BLIMP_PER_PARADIGM})" for _, title in BLIMP_COLUMNS) + " |",
             "|---|---|---|---|---|---|---|" + "---|" * len(BLIMP_COLUMNS)]
    for key, rs in groups.items():
        arm, minutes = key.rsplit("-m", 1)
        exit_ = plateau_exit(rs) + own_heldout(arm, rs)
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
    groups = {key: [r for r in rs if "blimp" in r] for key, rs in load_runs(results).items()}
    groups = {key: rs for key, rs in groups.items() if rs}
    if not groups:
        return "(no run scored on all of BLiMP)"
    runs = [r for rs in groups.values() for r in rs]
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


def trains_on(arm: str, flag="--data") -> str | None:
    """The prepared data (one of DATA) the arm trains on (flag --short-data: its short instances, or None)."""
    argv = ARMS[arm]
    given = [argv[i + 1] for i, a in enumerate(argv) if a == flag]        # the last one wins, as in argparse
    return given[-1].split("/")[-1] if given else "data-imdb" if flag == "--data" else None


def reads(arm: str) -> list:
    """Every prepared data the arm reads."""
    return [d for d in (trains_on(arm), trains_on(arm, "--short-data")) if d is not None]


def own_heldout(arm: str, rs=()) -> str:
    """What a plateau-exit cell adds when the run's own evaluations, which give the minute, are on
    held-out data prepared otherwise than data-imdb's (rs: runs whose summaries say their
    evaluations were on other held-out pairs until a step)."""
    other = next((r["curve_heldout"] for r in rs if r.get("curve_heldout")), None)
    if other:
        return f" (its own held-out to step {other['until_step']:,}: {other['data'].removeprefix('data-imdb-')})"
    return "" if trains_on(arm) == "data-imdb" else f" (its own held-out: {trains_on(arm).removeprefix('data-imdb-')})"


def plateau_exit(rs) -> str:
    """The plateau-exit cell of a row: mean ± sd over the runs that left the plateau, and how many never did."""
    never = sum(r["plateau_exit_cpu_min"] is None for r in rs)
    return mean_sd([r["plateau_exit_cpu_min"] for r in rs], digits=1) + (f" ({never} never)" if never else "")


UNDONE = {RECIPE: "recipe-", "tiny-mlm": "hour-"}   # a final recipe: its arms undoing a change, prefix + old value


def ablation(results=RESULTS, minutes=ABLATION_MINUTES, final=RECIPE) -> str:
    """Markdown, Cramming's ablation: each change from the old recipe to the final one, made alone in
    the old recipe and undone alone in the final one (the recipe, or the hour at 128 throughout), at
    `minutes` of budget; held-out MLM, plateau exit and BLiMP (first 20 a paradigm), mean ± sd over
    the seeds run (- where none has run). The recipe's short phase is a change of its own, undone by
    the hour at 128 (tiny-mlm)."""
    groups = load_runs(results)
    blimp = f"blimp{BLIMP_PER_PARADIGM}"

    def cells(arm, base):
        rs, bases = (groups.get(group_name(a, minutes), []) for a in (arm, base))
        if not rs:
            return ["-"] * 4
        heldout = mean_of(r["heldout_mlm"] for r in rs)
        change = f" ({heldout - mean_of(r['heldout_mlm'] for r in bases):+.3f})" if bases and arm != base else ""
        return [str(len(rs)), mean_sd([r["heldout_mlm"] for r in rs]) + change, plateau_exit(rs),
                mean_sd([r.get(blimp, {}).get("overall:overall") for r in rs], 100, 1)]

    both = final == RECIPE                             # the old recipe's side once, beside the recipe's
    left = (lambda arm: cells(arm, "old")) if both else (lambda arm: [])
    name = "the recipe" if both else "the hour at 128"
    side = ["seeds", "held-out MLM (change)", "plateau exit (CPU min)", f"BLiMP (first {BLIMP_PER_PARADIGM})"]
    head = ([f"old recipe + it: {side[0]}", *side[1:]] if both else []) + [f"{name} - it: {side[0]}", *side[1:]]
    lines = ["| change | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|",
             f"| none ({name} itself) | " + " | ".join(left("old") + cells(final, final)) + " |"]
    for knob, (old, new) in CHANGES.items():
        undone = cells(UNDONE[final] + old, final)
        lines.append(f"| {old} → {new} | " + " | ".join(left(f"old+{new}") + undone) + " |")
    if both:
        lines.append("| t128 → short64 | " + " | ".join(left("old+short64") + cells("tiny-mlm", final)) + " |")
    return "\n".join(lines)


def ablation_at_128(results=RESULTS) -> str:
    """Markdown: the ablation's changes undone alone in the hour at 128 throughout (tiny-mlm), where the
    screens start (the old recipe's side is the ablation's)."""
    return ablation(results, final="tiny-mlm")


def screens(results=RESULTS, minutes=ABLATION_MINUTES) -> str:
    """Markdown: each knob added alone to the hour at 128 (the hour+ arms but the recipe) at `minutes` of
    budget, against its own row: steps, held-out MLM (change), plateau exit, BLiMP (first 20)."""
    groups = load_runs(results)
    blimp = f"blimp{BLIMP_PER_PARADIGM}"
    base = groups.get(group_name("tiny-mlm", minutes), [])
    lines = [f"| the hour recipe + | its options | seeds | steps | CPU min | held-out MLM (change) | plateau exit (CPU min) "
             f"| BLiMP (first {BLIMP_PER_PARADIGM}) |", "|---|---|---|---|---|---|---|---|"]
    added = [a for a in ARMS if a.startswith("hour+") and a != RECIPE]     # the recipe's row is the ablation's
    for arm in ["tiny-mlm"] + added:
        rs = groups.get(group_name(arm, minutes), [])
        if not rs:
            continue
        heldout = mean_of(r["heldout_mlm"] for r in rs)
        change = f" ({heldout - mean_of(r['heldout_mlm'] for r in base):+.3f})" if base and arm != "tiny-mlm" else ""
        options = " ".join(ARMS[arm][len(ARMS["tiny-mlm"]):]).replace("{runs}/", "")
        lines.append(f"| {arm.removeprefix('hour+') if arm != 'tiny-mlm' else 'nothing'} | "
                     f"{f'`{options}`' if options else '(the recipe itself)'} | {len(rs)} | "
                     f"{mean_sd([r['plan']['steps'] for r in rs], digits=0)} | "
                     f"{mean_sd([r['cpu_s'] / 60 for r in rs], digits=1)} | "
                     f"{mean_sd([r['heldout_mlm'] for r in rs])}{change} | {plateau_exit(rs)}{own_heldout(arm, rs)} | "
                     f"{mean_sd([r.get(blimp, {}).get('overall:overall') for r in rs], 100, 1)} |")
    return "\n".join(lines)


def curve(results=RESULTS, arm=RECIPE, minutes=60) -> list:
    """[(step, CPU minute, held-out MLM, BLiMP overall, determiner-noun, subject-verb, previous-token
    head, next-token head)], each the mean over the seeds that kept a model at that step."""
    by_step = {}
    for run in load_runs(results).get(group_name(arm, minutes), []):
        heldout = {c["step"]: c["mlm_acc"] for c in run["curve"]}
        for point in run.get("snapshots", []):
            evaluated = max((s for s in heldout if s <= point["step"]), default=None)   # its last evaluation
            by_step.setdefault(point["step"], []).append(
                (point["cpu_min"], heldout.get(evaluated), *(point["blimp"][g] for g, _ in BLIMP_COLUMNS),
                 point["previous"], point["next"]))
    return [(step, *[mean_of(p[i] for p in points) for i in range(7)], len(points))
            for step, points in sorted(by_step.items())]


def curve_table(results=RESULTS, arm=RECIPE, minutes=60) -> str:
    """Markdown: the learning curve of what the model knows (`curve`)."""
    lines = ["| step | CPU min | held-out MLM (last evaluation) | " + " | ".join(f"{t} (first {BLIMP_PER_PARADIGM})"
             for _, t in BLIMP_COLUMNS) + " | previous-token head | next-token head | seeds |",
             "|---|---|---|---|---|---|---|---|---|"]
    for step, cpu, heldout, overall, det, sv, prev, next_, n in curve(results, arm, minutes):
        lines.append(f"| {step} | {cpu:.1f} | {'-' if heldout is None else f'{heldout:.3f}'} | {100 * overall:.1f} | "
                     f"{100 * det:.1f} | {100 * sv:.1f} | {prev:.2f} | {next_:.2f} | {n} |")
    return "\n".join(lines) if len(lines) > 2 else "(no kept models scored: run --snapshots, then curve)"


def plot_curve(path: str, results=RESULTS, arm=RECIPE, minutes=60) -> None:
    """The learning curve as one figure: held-out MLM, BLiMP's agreement and the heads by CPU minute,
    written as npbert writes its pictures (npbert/plotting.py: a PNG path checked before anything is
    drawn, a file npbert did not draw never replaced, the new one put in place in one step)."""
    from npbert.plotting import check_png_path, load_pyplot, save_png
    check_png_path(path, "--out")
    points = curve(results, arm, minutes)
    if not points:
        raise SystemExit("plot: no kept models scored (run --snapshots, then the curve stage, then summarize)")
    plt = load_pyplot()
    if plt is None:
        raise SystemExit("plot: needs matplotlib (pip install 'npbert[plot]')")
    x = [p[1] for p in points]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, label, style in ((2, "held-out MLM accuracy", "k-"), (3, "BLiMP (first 20 a paradigm)", "C0-"),
                            (4, "determiner-noun agreement", "C1-"), (5, "subject-verb agreement", "C2-"),
                            (6, "strongest previous-token head", "C3--"), (7, "strongest next-token head", "C4--")):
        ax.plot(x, [p[i] for p in points], style, marker="o", markersize=3, label=label)
    ax.axhline(0.5, color="grey", lw=0.5)
    ax.set_xlabel("CPU minutes of pretraining (one thread)")
    ax.set_ylim(0, 1)
    seeds = points[0][-1]
    ax.set_title(f"What the hour's tiny knows after N minutes ({arm}, {seeds} seed{'s' * (seeds > 1)})")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save_png(plt, fig, path)
    print(f"wrote {path}")


def missed_by(value, target, digits) -> str:
    """'met' when value reaches target (value >= target), else by how much it falls short."""
    return "met" if value >= target else f"missed by {target - value:.{digits}f}"


def what_an_hour_buys(results=RESULTS, arm=RECIPE, minutes=60, label="the hour recipe") -> str:
    """Markdown, README's one table: the hour's runs (mean ± sd over seeds) against the targets, each
    met or missed by how much (on the mean, or in every seed where the target asks that)."""
    from linguistics_results import paired_gains
    rs = load_runs(results).get(group_name(arm, minutes), [])
    whole = [r for r in rs if "blimp" in r]
    rows = [("pretraining seeds", str(len(rs)), "3", "met" if len(rs) >= 3 else f"{len(rs)} of 3")]
    if rs:
        cpu, heldout = [r["cpu_s"] / 60 for r in rs], [r["heldout_mlm"] for r in rs]
        rows += [("CPU minutes (one thread)", mean_sd(cpu, digits=1), "≤ 60, every seed",
                  "met" if max(cpu) <= 60 else f"over by {max(cpu) - 60:.1f}"),
                 ("held-out MLM accuracy", mean_sd(heldout), "≥ 0.36, every seed", missed_by(min(heldout), 0.36, 3))]
    if whole:
        blimp = [100 * r["blimp"]["overall:overall"] for r in whole]
        three_gram = 100 * whole[-1]["blimp_baselines"]["overall:overall"]["3-gram"]
        det = [100 * r["blimp"]["phenomenon:determiner_noun_agreement"] for r in whole]
        rows += [(f"BLiMP, all 67,000 pairs (%, {len(whole)} seeds)", mean_sd(blimp, digits=1),
                  "≥ 58.5 (MiniBERTa, 1M words)", missed_by(statistics.mean(blimp), 58.5, 1)),
                 (f"BLiMP over the 3-gram of its corpus ({three_gram:.1f})",
                  f"{statistics.mean(blimp) - three_gram:+.1f}", "≥ +5",
                  missed_by(statistics.mean(blimp) - three_gram, 5, 1)),
                 ("determiner-noun agreement (%)", mean_sd(det, digits=1), "≥ 70", missed_by(statistics.mean(det), 70, 1))]
    tuned = load_tuned(results)
    if tuned is not None:
        for labels, target in (("500", "≥ +5, every seed ahead"), ("all", "every seed ahead")):
            gap = [100 * g for g in paired_gains(tuned, group_name(arm, minutes), labels)]
            if gap:
                ahead = sum(g > 0 for g in gap)
                status = [] if ahead == len(gap) else [f"ahead in {ahead} of {len(gap)}"]
                if labels == "500" and statistics.mean(gap) < 5:
                    status.insert(0, missed_by(statistics.mean(gap), 5, 1))
                rows.append((f"rt-polarity, {labels} labels: test points over from scratch",
                             f"{mean_sd(gap, digits=1)} ({ahead} of {len(gap)} seeds ahead)", target,
                             "; ".join(status) or "met"))
    return "\n".join([f"| {label} | measured | target | status |", "|---|---|---|---|"]
                     + [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows])


def at_128(results=RESULTS) -> str:
    """Markdown: the hour at T 128 throughout (the recipe without its short phase) against the same targets."""
    return what_an_hour_buys(results, "tiny-mlm", 60, label="tiny-mlm (T 128 throughout)")


def curve_at_128(results=RESULTS) -> str:
    """Markdown: the learning curve of the hour at T 128 throughout."""
    return curve_table(results, "tiny-mlm", 60)


def heads_report(results=RESULTS, arms=(RECIPE, "tiny-mlm"), minutes=60) -> str:
    """A line per seed of each arm: the heads `npbert attention-heads` names, and the strongest
    previous- and next-token shares."""
    groups = load_runs(results)
    runs = [r for arm in arms for r in groups.get(group_name(arm, minutes), []) if "heads" in r]
    return "\n".join(f"{r['name']}: " + ("; ".join(f"layer {layer} head {head} {what}" for layer, head, what
                                                   in r["heads"]["named"]) or "no named head")
                     + f" ({len(r['heads']['broad'])} broad); strongest previous-token share "
                       f"{r['heads']['previous']:.2f}, next-token {r['heads']['next']:.2f}" for r in runs) \
        or "(no attention heads summarized)"


def probe_report(results=RESULTS, arms=(RECIPE, "tiny-mlm"), minutes=60) -> str:
    """Markdown: test accuracy % of a linear probe on each layer, mean ± sd over each arm's seeds,
    beside the random-initialised control of the same seeds."""
    groups = load_runs(results)
    by_arm = {arm: runs for arm in arms
              if (runs := [r for r in groups.get(group_name(arm, minutes), []) if "probes" in r])}
    if not by_arm:
        return "(no probe summarized)"
    layers = len(next(iter(by_arm.values()))[0]["probes"][PROBES[0][0]]["pretrained"])
    lines = ["| task (majority class) | model | " + " | ".join(f"layer {i}" for i in range(layers)) + " |",
             "|---|---|" + "---|" * layers]
    for task, limit in PROBES:
        first = True
        for arm, runs in by_arm.items():
            rs = [r["probes"][task] for r in runs if task in r["probes"]]
            for model, title in (("pretrained", f"{group_name(arm, minutes)} ({len(rs)} seed{'s' * (len(rs) > 1)})"),
                                 ("random-init", "its random-init control")):
                head = (f"{task}, {f'{int(limit):,}' if limit else 'all'} training sentences "
                        f"({100 * rs[0]['majority']:.1f})") if first else ""
                first = False
                lines.append(f"| {head} | {title} | " + " | ".join(mean_sd([p[model][i] for p in rs], 100, 1)
                                                                    for i in range(layers)) + " |")
    return "\n".join(lines)


def finetune_report(results=RESULTS) -> str:
    """Markdown: rt-polarity from the hour models against from scratch (linguistics_results' table)."""
    from linguistics_results import finetune_table
    tuned = load_tuned(results)
    return "(no fine-tuning run summarized)" if tuned is None else "\n".join(finetune_table(tuned)[1:])


def finetune_by_learning_rate(results=RESULTS) -> str:
    """Markdown: rt-polarity from each hour model and from scratch at each of FINETUNE_LRS, and at the
    rate each side's mean dev accuracy picks (as BERT's paper picks its fine-tuning rate on dev), the
    test gain paired by fine-tuning seed."""
    from linguistics_results import paired_gains, pretrained_names, side_accuracies
    tuned = load_tuned(results)
    if tuned is None:
        return "(no fine-tuning run summarized)"
    lines = ["| pretrained | training sentences | peak lr | pretrained dev | pretrained test | from scratch dev | "
             "from scratch test | test gain | pretrained ahead |", "|---|---|---|---|---|---|---|---|---|"]
    for name in pretrained_names(tuned):
        for labels in ("all", "500"):
            sides = (f"pretrained-{name}", "scratch")
            by_lr = {lr: [side_accuracies(tuned, side, labels, lr) for side in sides] for lr in FINETUNE_LRS}
            by_lr = {lr: acc for lr, acc in by_lr.items() if all(dev for dev, _ in acc)}
            if not by_lr:
                continue
            picked = [max(by_lr, key=lambda lr: statistics.mean(by_lr[lr][i][0])) for i in range(2)]
            rows = [((lr, lr), lr) for lr in by_lr]
            if len(by_lr) > 1:
                rows.append((picked, "picked on dev: {} / {}".format(*picked)))
            for lrs, label in rows:
                cells = [f"{mean_sd(accuracies, 100, 1)} ({len(accuracies)})" for i in range(2)
                         for accuracies in by_lr[lrs[i]][i]]
                gap = paired_gains(tuned, name, labels, lrs)
                lines.append(f"| {name} | {labels} | {label} | " + " | ".join(cells) + f" | {mean_sd(gap, 100, 1)} | "
                             f"{sum(g > 0 for g in gap)} of {len(gap)} |")
    return "\n".join(lines) if len(lines) > 2 else "(no fine-tuning run at every side)"


# docs/hour_recipe.md's pasted tables, by the name its markers give each (`<!-- NAME: python
# benchmarks/hour_recipe.py report -->` ... `<!-- end of NAME -->`), in the order `report` prints them
PAGE = {"the table": report, "the hour in one table": what_an_hour_buys, "the run anew": anew_report,
        "the replay": replay_report, "all of BLiMP": whole_blimp, "the ablation": ablation,
        "the ablation at 128": ablation_at_128, "the screens": screens, "the hour at 128": at_128,
        "the learning curve": curve_table, "the learning curve at 128": curve_at_128, "the heads": heads_report,
        "the probes": probe_report, "fine-tuning": finetune_report,
        "fine-tuning by learning rate": finetune_by_learning_rate}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stage", choices=("run", "anew", "replay", "blimp", "curve", "heads", "probes", "finetune",
                                     "summarize", "report", "plot"))
    p.add_argument("arms", nargs="*", help=f"run: which arms ({', '.join(ARMS)})")
    p.add_argument("--runs", default="runs/hour", help="every run, score and log under it (default runs/hour)")
    p.add_argument("--minutes", type=float, default=60.0, help="run: each run's --budget (default 60)")
    p.add_argument("--seeds", type=lambda text: [int(x) for x in text.split(",")], default=[0],
                   help="run: pretraining seeds, comma-separated (default 0)")
    p.add_argument("--steps", type=int, default=None,
                   help="run: this step count instead of planning --minutes (a plan recorded by an earlier seed)")
    p.add_argument("--plan-of", type=int, default=None, metavar="SEED",
                   help="run: each arm's --steps from the plan of its run with this seed at --minutes (its "
                        "summary in --results), so that seeds differ by the seed alone")
    p.add_argument("--snapshots", type=int, default=None, metavar="STEPS",
                   help="run (with --steps), replay: keep the model every STEPS steps under snapshots/RUN (a "
                        "learning curve); a replay then goes to the run's last step")
    p.add_argument("--upto", type=int, default=1000, help="replay: the step to which a run is made again "
                                                           "(default 1000)")
    p.add_argument("--jobs", type=int, default=2, help="runs side by side, one thread each (default 2)")
    p.add_argument("--blimp", default=None, help="blimp: BLiMP's data/ directory")
    p.add_argument("--results", default=RESULTS, help="summarize, report: the summaries' directory (default: "
                                                      "benchmarks/results/hour_recipe)")
    p.add_argument("--arm", default=None, help="report: only this arm, at --minutes; heads, probes, finetune, plot: "
                                                f"from this arm's runs at --minutes (default {RECIPE}: the recipe)")
    p.add_argument("--out", default=None, help="plot: the PNG to write (default docs/hour_curve.png); heads: the "
                                               "first seed's picture (default docs/hour_heads.png)")
    p.add_argument("--all", action="store_true", help="blimp: the hour's runs on all 67,000 pairs, with the "
                                                       "unigram and 3-gram of their corpus (~10 min of CPU each)")
    p.add_argument("--quick", action="store_true", help="run: 200 built-in stories instead of IMDB (a smoke "
                                                             "test); probes: 100 training sentences")
    args = p.parse_args(argv)
    unknown = [a for a in args.arms if a not in ARMS]
    if unknown:
        p.error(f"unknown arm {unknown[0]!r}; choose from {', '.join(ARMS)}")
    r = Runner(args.runs, args.jobs)
    if args.stage == "run":
        for commands in prepare_commands(r, args.arms, args.quick):
            r.run_all(commands)
        if args.steps is not None and args.plan_of is not None:
            p.error("--steps and --plan-of both set a run's step count: give one")
        try:
            commands = [c for arm in args.arms for c in pretrain_commands(
                r, [arm], args.minutes, args.seeds,
                args.steps if args.plan_of is None else planned_steps(args.results, arm, args.minutes, args.plan_of))]
        except LookupError as e:
            p.error(str(e))
        if args.snapshots:
            if not args.steps:
                p.error("--snapshots needs --steps (the segments are counted in steps)")
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(max(1, args.jobs)) as pool:
                list(pool.map(lambda c: run_with_snapshots(r, c, args.snapshots, args.steps), commands))
        else:
            r.run_all(commands)
    elif args.stage == "blimp":
        if not args.blimp:
            p.error("blimp needs --blimp DIR (BLiMP's data/)")
        r.run_all(blimp_commands(r, args.blimp, args.all))
    elif args.stage == "replay":
        for arm in args.arms:
            for seed in args.seeds:
                replay(r, arm, args.minutes, seed, args.upto, args.results, args.snapshots)
    elif args.stage == "anew":
        r.run_all([anew_command(r, args.quick)])
    elif args.stage == "curve":
        if not args.blimp:
            p.error("curve needs --blimp DIR (BLiMP's data/)")
        r.run_all(curve_commands(r, args.blimp))
    elif args.stage == "heads":
        r.run_all(heads_commands(r, args.arm or RECIPE, args.minutes, args.out or HEADS_PICTURE))
    elif args.stage == "probes":
        r.run_all(probe_commands(r, args.arm or RECIPE, args.minutes, args.quick))
    elif args.stage == "finetune":
        r.run_all(finetune_commands(r, args.arm or RECIPE, args.minutes, args.quick))
    elif args.stage == "plot":
        from npbert.errors import NpbertError
        try:
            plot_curve(args.out or os.path.join(ROOT, "docs", "hour_curve.png"), args.results,
                       args.arm or RECIPE, args.minutes)
        except NpbertError as e:
            p.error(str(e))
    elif args.stage == "summarize":
        summarize(r, args.results)
    else:
        print(report(args.results, args.arm, args.minutes if args.arm else None))
        if args.arm is None:
            for table in list(PAGE.values())[1:]:
                print("\n" + table(args.results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
