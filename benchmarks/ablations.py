"""The BERT paper's ablations at npbert's scale (docs/ablations.md): NSP on/off, the masking mixes
of Table 8, model size (Table 6), feature-based vs fine-tuning (Table 7), each with seeds.

    python benchmarks/ablations.py run --out runs/ablations            # every study, 2 jobs at a time
    python benchmarks/ablations.py run --studies nsp --jobs 1          # one study
    python benchmarks/ablations.py report --out runs/ablations         # the tables of docs/ablations.md

Every unit is an `npbert` command (prepare, pretrain, finetune) run in its own process with one
BLAS and one kernel thread, so --jobs runs side by side on as many cores. A unit whose result is
already in OUT/results/ is not run again: an interrupted run continues where it stopped, and a
study added later reuses the pretrained models it shares. Each result records the command and
its wall time. The report pairs runs by seed (same data order, same masked positions, same
initialisation: only the ablated choice differs) and gives the mean, the standard error of the
paired differences and their sign count.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

STEPS = 400                                    # pretraining steps of every model (batch 32 x 64 tokens)
# Peak learning rates: the previous recipe's 3e-3 for tiny; mini at 3e-3 stayed at the unigram
# baseline (held-out MLM accuracy 0.080 after 400 steps, both seeds: the first runs, kept in
# the results as pt-builtin-mini-nsp-...), so it runs at the 1e-3 docs/pretraining.md uses for mini.
PRETRAIN_LR = {"tiny": None, "mini": 1e-3}
# The previous recipe's peak and warmup share (npbert pretrain's default is 2e-3 with 25% warmup,
# docs/pretraining.md), passed explicitly so that these runs stay reproducible.
OLD_DEFAULT_LR, WARMUP_STEPS = 3e-3, STEPS // 10
MIXES = ("80/10/10", "100/0/0", "80/0/20", "80/20/0", "0/20/80", "0/0/100")   # Table 8: MASK/SAME/RND
FEATURES = ("embeddings", "second-to-last", "last", "weighted-last-four", "concat-last-four")   # Table 7
# task -> (npbert task, its metric, fine-tuning options). The built-in tasks are fine-tuned from
# models pretrained on the built-in corpus (their world, their 624-token vocabulary); rt-polarity
# from models pretrained on 6,000 IMDB reviews (8,192 WordPieces: the built-in vocabulary
# leaves 53% of rt-polarity's tokens [UNK]). Learning rates: the measured ones of
# docs/results.md (qnli, 1,000 records) and docs/finetuning.md (tagging: fine-tuning 1e-3,
# a head on frozen features 1e-2), not tuned per ablation.
TASKS = {"pair": ("builtin-qnli", "accuracy", dict(max_train_examples=1000, epochs=3, learning_rate=1e-4)),
         "single": ("rt-polarity", "accuracy", dict(max_train_examples=4000, epochs=2, learning_rate=5e-4)),
         "tagging": ("builtin-tagging", "entity_f1", dict(max_train_examples=2000, epochs=2, learning_rate=1e-3))}
FEATURE_LR = 1e-2
CORPUS = {"pair": "builtin", "tagging": "builtin", "single": "imdb"}
STUDIES = ("nsp", "masking", "size", "features")


def mix_name(mix):
    return mix.replace("/", "-")


def pretrain_unit(preset, seed, nsp=True, mix="80/10/10", corpus="builtin"):
    lr = PRETRAIN_LR.get(preset)
    name = f"pt-{corpus}-{preset}{f'-lr{lr:g}' if lr else ''}-{'nsp' if nsp else 'nonsp'}-mix{mix_name(mix)}-s{seed}"
    return name, (["pretrain", "--data", f"data/{corpus}-{mix_name(mix)}", "--preset", preset, "--steps", str(STEPS),
                   "--seed", str(seed), "--eval-batches", "40", "--learning-rate", f"{lr or OLD_DEFAULT_LR:g}",
                   "--warmup-steps", str(WARMUP_STEPS)]
                  + ([] if nsp else ["--no-nsp"]))


def finetune_unit(model, task, seed, features="fine-tune"):
    name = f"ft-{model[3:]}-{task}-{features}"
    options = dict(TASKS[task][2], max_eval_examples=1000)
    if features != "fine-tune":
        options["learning_rate"] = FEATURE_LR
    argv = ["finetune", "--task", TASKS[task][0], "--model", f"{model}/checkpoint", "--seed", str(seed),
            "--features", features]
    for key, value in options.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    return name, argv


def plan(studies, seeds) -> list:
    """-> chains: (pretraining unit, [fine-tuning units]); a chain's units run in order."""
    chains = {}

    def add(preset, seed, finetunes, nsp=True, mix="80/10/10", corpus="builtin"):
        pt = pretrain_unit(preset, seed, nsp, mix, corpus)
        units = chains.setdefault(pt[0], (pt, []))[1]
        for task, features in finetunes:
            unit = finetune_unit(pt[0], task, seed, features)
            if unit[0] not in (u[0] for u in units):
                units.append(unit)

    for s in seeds:
        if "nsp" in studies:
            for nsp in (True, False):
                add("tiny", s, [("pair", "fine-tune")], nsp=nsp)
                add("tiny", s, [("single", "fine-tune")], nsp=nsp, corpus="imdb")
        if "masking" in studies and s < 2:
            for mix in MIXES:
                add("tiny", s, [("pair", "fine-tune"), ("tagging", "fine-tune"), ("tagging", "last")], mix=mix)
        if "size" in studies:
            for preset in ("tiny", "mini") if s < 2 else ():   # small: ~45 min a seed here, left out
                add(preset, s, [("pair", "fine-tune"), ("tagging", "fine-tune")])
        if "features" in studies and s < 2:
            add("mini", s, [("tagging", "fine-tune")] + [("tagging", f) for f in FEATURES])
    order = {"small": 0, "mini": 1, "tiny": 2}                                  # longest first
    return sorted(chains.values(), key=lambda c: order[c[0][0].split("-")[2]])


def prepare_units(studies) -> list:
    mixes = MIXES if "masking" in studies else ("80/10/10",)
    units = [(f"data-builtin-{mix_name(m)}", ["prepare", "--corpus", "builtin", "--mask-mix", m, "--out",
                                              f"data/builtin-{mix_name(m)}"]) for m in mixes]
    if "nsp" in studies:
        units.append(("data-imdb-80-10-10", ["prepare", "--corpus", "imdb", "--max-seq-length", "64",
                                             "--max-documents", "6000", "--dupe-factor", "2", "--out",
                                             "data/imdb-80-10-10"]))
    return units


def run_unit(out, unit, log) -> dict:
    name, argv = unit
    result_path = os.path.join(out, "results", name + ".json")
    if os.path.exists(result_path):
        with open(result_path) as f:
            return json.load(f)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", NPBERT_NUM_THREADS="1")
    if argv[0] in ("pretrain", "finetune"):
        argv = argv + ["--out", name, "--overwrite"]
    command = [sys.executable, "-m", "npbert.cli", *argv]
    log(f"start {name}")
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=out, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    with open(os.path.join(out, "logs", name + ".log"), "w") as f:
        f.write(done.stdout + done.stderr)
    if done.returncode != 0:
        log(f"FAILED {name} ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
        return {}
    result = dict(name=name, command="npbert " + " ".join(argv), seconds=round(seconds, 1), **scores(out, name, argv))
    with open(result_path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(result_path + ".tmp", result_path)
    log(f"done {name} in {seconds:.0f} s: {result}")
    return result


def scores(out, name, argv) -> dict:
    """The held-out figures of a pretraining run (last evaluation), or the best dev score of a fine-tuning."""
    path = os.path.join(out, name, "metrics.jsonl")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        evals = [r for r in map(json.loads, f) if r.get("kind") == "eval"]
    if argv[0] == "pretrain":
        return {k: v for k, v in evals[-1].items() if k in ("step", "mlm_acc", "mlm_loss", "nsp_acc", "nsp_loss")}
    metric = next(m for t, m, _ in TASKS.values() if t == argv[argv.index("--task") + 1])
    evals = [r for r in evals if metric in r]
    if not evals:
        return {}
    best = max(evals, key=lambda r: r[metric])
    return dict(metric=metric, score=best[metric], epoch=best.get("epoch"))


def run(args) -> int:
    out = os.path.abspath(args.out)
    for sub in ("results", "logs", "data"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    studies, seeds = args.studies.split(","), [int(s) for s in args.seeds.split(",")]

    def log(message):
        print(time.strftime("%H:%M:%S"), message, flush=True)

    for unit in prepare_units(studies):
        run_unit(out, unit, log)
    chains = plan(studies, seeds)
    log(f"{len(chains)} pretrainings, {sum(len(c[1]) for c in chains)} fine-tunings, {args.jobs} at a time")

    def chain(c):
        if run_unit(out, c[0], log):
            for unit in c[1]:
                run_unit(out, unit, log)

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(chain, chains))
    return 0


# --- the report ---------------------------------------------------------------------------------

def load(out) -> dict:
    results = {}
    for name in os.listdir(os.path.join(out, "results")):
        with open(os.path.join(out, "results", name)) as f:
            r = json.load(f)
        results[r["name"]] = r
    return results


def paired(a: list, b: list) -> str:
    """'mean(a) vs mean(b): diff +x.xxx ± se (k/n higher)' over the seeds both have."""
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    if not pairs:
        return "-"
    d = [x - y for x, y in pairs]
    n = len(d)
    mean = sum(d) / n
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n) if n > 1 else float("nan")
    return f"{mean:+.3f} ± {se:.3f} ({sum(x > 0 for x in d)}/{n})"


def mean(values) -> str:
    values = [v for v in values if v is not None]
    return f"{sum(values) / len(values):.3f}" if values else "-"


def common_heldout_accuracy(out, model) -> float | None:
    """Held-out MLM accuracy of a pretrained model on the 80/10/10 data's held-out split (the
    same 40 batches for every model, whatever mix it was trained with), cached in results/."""
    path = os.path.join(out, "results", f"heldout8010-{model}.json")
    if not os.path.exists(path):
        if not os.path.exists(os.path.join(out, "results", model + ".json")):   # not (yet) pretrained to the end
            return None
        from npbert import set_backend
        from npbert.checkpoint import load_pretrained
        from npbert.pretraining.recipe import evaluate, load_prepared
        set_backend("numba")
        loaded = load_pretrained(os.path.join(out, model, "checkpoint"))
        heldout = load_prepared(os.path.join(out, "data", "builtin-80-10-10"))[1]
        scores = evaluate(loaded.params, loaded.config, heldout, 32, max_batches=40, nsp=False)
        with open(path, "w") as f:
            json.dump(dict(name=f"heldout8010-{model}", **scores), f)
    with open(path) as f:
        return json.load(f)["mlm_acc"]


def report(args) -> int:
    out = os.path.abspath(args.out)
    results = load(out)
    seeds = [int(s) for s in args.seeds.split(",")]

    def pt(preset, s, nsp=True, mix="80/10/10", key="mlm_acc", corpus="builtin"):
        return results.get(pretrain_unit(preset, s, nsp, mix, corpus)[0], {}).get(key)

    def ft(preset, s, task, features="fine-tune", nsp=True, mix="80/10/10"):
        name = finetune_unit(pretrain_unit(preset, s, nsp, mix, CORPUS[task])[0], task, s, features)[0]
        return results.get(name, {}).get("score")

    print("## NSP on vs off (tiny, seeds " + ",".join(map(str, seeds)) + ")\n")
    print("| | built-in corpus: held-out MLM acc | NSP acc | builtin-qnli acc | IMDB: held-out MLM acc | NSP acc "
          "| rt-polarity acc |\n|---|---|---|---|---|---|---|")
    rows = {nsp: [[pt("tiny", s, nsp, corpus=c, key=k) for s in seeds] for c in ("builtin", "imdb")
                  for k in ("mlm_acc", "nsp_acc", "task")] for nsp in (True, False)}
    for nsp in (True, False):                          # the task column of each corpus: its fine-tuning
        rows[nsp][2] = [ft("tiny", s, "pair", nsp=nsp) for s in seeds]
        rows[nsp][5] = [ft("tiny", s, "single", nsp=nsp) for s in seeds]
    for nsp, label in ((True, "NSP + MLM"), (False, "MLM only")):
        print(f"| {label} | " + " | ".join(mean(col) for col in rows[nsp]) + " |")
    print("| on - off (paired) | " + " | ".join(paired(a, b) if i not in (1, 4) else "-"
                                                 for i, (a, b) in enumerate(zip(rows[True], rows[False]))) + " |\n")

    mseeds = [s for s in seeds if s < 2]
    print("## Masking mixes (tiny, seeds " + ",".join(map(str, mseeds)) + ")\n")
    print("| MASK/SAME/RND | held-out MLM acc, own mix / 80/10/10 | qnli acc (fine-tune) | tagging F1 (fine-tune) | tagging F1 (feature-based, last) | "
          "each vs 80/10/10: qnli / F1 ft / F1 feat |\n|---|---|---|---|---|---|")
    base = [[ft("tiny", s, t, f) for s in mseeds] for t, f in (("pair", "fine-tune"), ("tagging", "fine-tune"),
                                                               ("tagging", "last"))]
    for mix in MIXES:
        cols = [[ft("tiny", s, t, f, mix=mix) for s in mseeds] for t, f in (("pair", "fine-tune"),
                                                                             ("tagging", "fine-tune"),
                                                                             ("tagging", "last"))]
        diffs = " / ".join(paired(c, b) for c, b in zip(cols, base)) if mix != MIXES[0] else "-"
        common = mean(common_heldout_accuracy(out, pretrain_unit("tiny", s, mix=mix)[0]) for s in mseeds)
        print(f"| {mix} | {mean(pt('tiny', s, mix=mix) for s in mseeds)} / {common} | " + " | ".join(mean(c) for c in cols)
              + f" | {diffs} |")

    print("\n## Model size (same steps and tokens)\n")
    print("| preset | layers / hidden / heads | seeds | held-out MLM acc | qnli acc | tagging F1 |\n|---|---|---|---|---|---|")
    shape = {"tiny": "2 / 128 / 2", "mini": "4 / 256 / 4", "small": "4 / 512 / 8"}
    for preset in ("tiny", "mini"):
        have = [s for s in seeds if pt(preset, s) is not None]
        print(f"| {preset} | {shape[preset]} | {','.join(map(str, have)) or '-'} | {mean(pt(preset, s) for s in have)} | "
              f"{mean(ft(preset, s, 'pair') for s in have)} | {mean(ft(preset, s, 'tagging') for s in have)} |")
    for big in ("mini",):
        both = [s for s in seeds if pt(big, s) is not None]
        print(f"\n{big} - tiny (paired by seed): MLM acc {paired([pt(big, s) for s in both], [pt('tiny', s) for s in both])}, "
              f"qnli {paired([ft(big, s, 'pair') for s in both], [ft('tiny', s, 'pair') for s in both])}, tagging F1 "
              f"{paired([ft(big, s, 'tagging') for s in both], [ft('tiny', s, 'tagging') for s in both])}")

    print("\n## Feature-based vs fine-tuning (mini, builtin-tagging entity F1, seeds " + ",".join(map(str, mseeds)) + ")\n")
    print("| approach | dev entity F1 | vs fine-tuning (paired) |\n|---|---|---|")
    full = [ft("mini", s, "tagging") for s in mseeds]
    print(f"| fine-tuning | {mean(full)} | - |")
    for features in FEATURES:
        col = [ft("mini", s, "tagging", features) for s in mseeds]
        print(f"| {features} | {mean(col)} | {paired(col, full)} |")

    print("\n## Wall time (one core each)\n")
    total = {}
    for r in results.values():
        kind = r["name"].split("-")[0]
        if kind == "heldout8010":
            continue
        total[kind] = total.get(kind, 0.0) + r.get("seconds", 0.0)
    print(", ".join(f"{k}: {v / 60:.1f} min over {sum(n.startswith(k) for n in results)} runs" for k, v in total.items()))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("run", "report"))
    p.add_argument("--out", default="runs/ablations")
    p.add_argument("--studies", default=",".join(STUDIES))
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--jobs", type=int, default=2, help="units side by side (one core each)")
    p.add_argument("--tiny-lr", type=float, default=None,
                   help="peak pretraining learning rate of the tiny models (default: 3e-3, the previous recipe's, "
                        "docs/pretraining.md); named in the runs")
    args = p.parse_args(argv)
    PRETRAIN_LR["tiny"] = args.tiny_lr
    return run(args) if args.what == "run" else report(args)


if __name__ == "__main__":
    sys.exit(main())
