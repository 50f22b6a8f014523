"""docs/hour_recipe.md's tables come from benchmarks/hour_recipe.py: its pipeline (prepare both
kinds of data, pretrain arms on a budget, summarize, report) end to end on 200 built-in stories,
and the page holds the report of the summaries kept in benchmarks/results/hour_recipe/."""
import json
import os
import re

import pytest

from support.scripts import ROOT, load_script


def script():
    return load_script("benchmarks/hour_recipe.py")


@pytest.mark.slow
def test_the_quick_pipeline_runs_summarizes_and_reports(tmp_path, capsys):
    s = script()
    runs, results = str(tmp_path / "runs"), str(tmp_path / "results")
    assert s.main(["run", "tiny-mlm", "tiny-sentences", "--quick", "--minutes", "0.2", "--runs", runs,
                   "--jobs", "1"]) == 0
    assert s.main(["summarize", "--runs", runs, "--results", results]) == 0
    assert s.main(["report", "--results", results]) == 0
    out = capsys.readouterr().out
    table = out[out.index("| arm |"):].split("\n\n")[0]
    assert [row.split(" | ")[0] for row in table.splitlines()[2:]] == ["| tiny-mlm", "| tiny-sentences"]
    assert "\n(no run scored on all of BLiMP)\n" in out                       # the quick runs are 0.2 minutes
    for name in ("tiny-mlm-m0.2-s0", "tiny-sentences-m0.2-s0"):
        with open(os.path.join(results, f"{name}.json")) as f:
            run = json.load(f)
        assert run["plan"]["steps"] >= 1 and 0 <= run["heldout_mlm"] <= 1 and run["cpu_s"] > 0
        assert run["curve"] == sorted(run["curve"], key=lambda c: c["step"])
    with open(os.path.join(results, "tiny-sentences-m0.2-s0.json")) as f:
        assert json.load(f)["options"]["instances"] == "sentences"
    assert s.main(["run", "tiny-mlm", "--quick", "--minutes", "0.2", "--runs", runs, "--jobs", "1"]) == 0
    assert "npbert pretrain" not in capsys.readouterr().out                 # a finished run is not run again
    with open(os.path.join(results, "tiny-mlm-m0.2-s0.json")) as f:
        upto = min(200, json.load(f)["plan"]["steps"])                     # records every 100 steps, and the last
    assert s.main(["replay", "tiny-mlm", "--minutes", "0.2", "--upto", str(upto), "--runs", runs,
                   "--results", results]) == 0
    with open(os.path.join(results, "replay", "tiny-mlm-m0.2-s0.json")) as f:
        replayed = json.load(f)
    assert replayed["records"] >= 2 and replayed["identical"] and replayed["first_difference"] is None
    assert "against tiny-mlm-m0.2-s0's: identical, to the last bit of every float" in s.replay_report(results)
    # another seed on seed 0's plan: the same step count, whatever the clock says now
    assert s.main(["run", "tiny-mlm", "--quick", "--minutes", "0.2", "--seeds", "1", "--plan-of", "0", "--runs", runs,
                   "--results", results, "--jobs", "1"]) == 0
    assert s.main(["summarize", "--runs", runs, "--results", results]) == 0
    plans = []
    for seed in (0, 1):
        with open(os.path.join(results, f"tiny-mlm-m0.2-s{seed}.json")) as f:
            plans.append(json.load(f)["plan"]["steps"])
    assert plans[0] == plans[1]
    capsys.readouterr()
    for wrong in (["--plan-of", "7"], ["--plan-of", "0", "--steps", "3"]):
        with pytest.raises(SystemExit):
            s.main(["run", "tiny-mlm", "--quick", "--minutes", "0.2", "--seeds", "2", "--runs", runs,
                    "--results", results, *wrong])
    assert "usage:" in capsys.readouterr().err and not os.path.exists(os.path.join(runs, "tiny-mlm-m0.2-s2"))


def write_blimp(directory):
    """Two paradigm files in BLiMP's format, two pairs each."""
    directory.mkdir()
    for uid, term, good, bad in (("da_noun", "determiner_noun_agreement", "the dog runs .", "the dogs runs ."),
                                 ("sv_agr", "subject_verb_agreement", "the cat sits .", "the cat sit .")):
        with open(directory / f"{uid}.jsonl", "w") as f:
            for k in range(2):
                f.write(json.dumps({"sentence_good": good, "sentence_bad": bad, "field": "morphology",
                                    "linguistics_term": term, "UID": uid, "pairID": str(k)}) + "\n")
    return str(directory)


@pytest.mark.slow
def test_a_run_kept_in_segments_is_the_run_and_its_curve_and_finetuning_reach_the_report(tmp_path, capsys):
    s = script()
    runs, plain, results = str(tmp_path / "runs"), str(tmp_path / "plain"), str(tmp_path / "results")
    name = f"{s.RECIPE}-m60-s0"                          # the recipe: its short phase's switch at step 6 of 7
    common = [s.RECIPE, "--quick", "--steps", "7", "--jobs", "1"]
    assert s.main(["run", *common, "--snapshots", "3", "--runs", runs]) == 0
    assert s.main(["run", *common, "--runs", plain]) == 0
    kept = os.path.join(runs, "snapshots", name)
    assert sorted(d for d in os.listdir(kept) if not d.endswith(".json")) == ["step-00003", "step-00006", "step-00007"]
    with open(os.path.join(kept, "step-00007", "model.safetensors"), "rb") as f, \
            open(os.path.join(plain, name, "checkpoint", "model.safetensors"), "rb") as g:
        assert f.read() == g.read()                  # stopped and resumed twice: the uninterrupted run, to the bit
    with open(os.path.join(kept, "step-00003", "model.safetensors"), "rb") as f, \
            open(os.path.join(kept, "step-00007", "model.safetensors"), "rb") as g:
        assert f.read() != g.read()
    assert s.main(["replay", s.RECIPE, "--snapshots", "4", "--runs", plain, "--results", results]) == 0
    with open(os.path.join(results, "replay", f"{name}.json")) as f:
        replayed = json.load(f)
    assert (replayed["upto"], replayed["identical"], replayed["same_model"]) == (7, True, True)
    assert sorted(d for d in os.listdir(os.path.join(plain, "snapshots", name)) if not d.endswith(".json")) == \
        ["step-00004", "step-00007"]                 # the replay's models: the run's snapshots
    assert s.main(["curve", "--runs", runs, "--blimp", write_blimp(tmp_path / "blimp"), "--jobs", "1"]) == 0
    assert s.main(["anew", "--quick", "--runs", runs]) == 0
    assert s.main(["finetune", "--quick", "--runs", runs, "--jobs", "1"]) == 0
    assert s.main(["probes", "--quick", "--runs", runs, "--jobs", "1"]) == 0
    capsys.readouterr()
    assert s.main(["summarize", "--runs", runs, "--results", results]) == 0
    assert s.main(["report", "--results", results]) == 0
    out = capsys.readouterr().out
    curve = out[out.index("| step |"):].split("\n\n")[0].splitlines()[2:]
    assert [row.split(" | ")[0] for row in curve] == ["| 3", "| 6", "| 7"]
    assert all(row.endswith("| 1 |") for row in curve)                  # one seed kept models
    anew = next(line for line in out.splitlines() if line.startswith("`npbert pretrain --corpus builtin --budget 0.2`"))
    assert "steps planned" in anew and "held-out pairs against the recipe's rows'" in anew     # name's
    tuned = out[out.index("| pretrained |"):].split("\n\n")[0].splitlines()[2:]
    assert [row.split(" | ")[:2] for row in tuned] == [[f"| {s.RECIPE}-m60", "all"], [f"| {s.RECIPE}-m60", "500"]]
    probes = out[out.index("| task (majority class) |"):].split("\n\n")[0].splitlines()[2:]
    assert [row.split(" | ")[1] for row in probes] == [f"{s.RECIPE}-m60 (1 seed)", "its random-init control"] * 2
    assert "(no attention heads summarized)" in out
    pytest.importorskip("matplotlib")
    picture = tmp_path / "heads.png"
    assert s.main(["heads", "--runs", runs, "--out", str(picture), "--jobs", "1"]) == 0
    assert picture.stat().st_size > 0
    assert s.main(["summarize", "--runs", runs, "--results", results]) == 0
    assert s.heads_report(results).startswith(f"{name}: ")
    assert "strongest previous-token share" in s.heads_report(results)
    assert s.main(["plot", "--results", results, "--out", str(tmp_path / "curve.png")]) == 0
    assert (tmp_path / "curve.png").stat().st_size > 0
    assert s.main(["plot", "--results", results, "--out", str(tmp_path / "curve.png")]) == 0   # its own: redrawn
    mine = tmp_path / "mine.png"
    mine.write_bytes(b"a picture of the user's")
    with pytest.raises(SystemExit):
        s.main(["plot", "--results", results, "--out", str(mine)])
    assert mine.read_bytes() == b"a picture of the user's"                   # not npbert's: left as it was


def test_the_pages_recipe_is_what_the_defaults_of_a_corpus_run():
    """The arm the page and README measure as the recipe trains with `npbert pretrain`'s defaults for
    a corpus (CORPUS_RECIPE, the default preset, the short phase at its length, share and new
    positions): a default changed without the page's runs, or an arm without the default, fails here."""
    from npbert.pretraining.pretrain_options import CORPUS_RECIPE, PRETRAIN_OPTIONS
    s = script()
    arm = s.ARMS[s.RECIPE]

    def given(flag):
        return arm[arm.index(flag) + 1]
    preset = next(o.default for o in PRETRAIN_OPTIONS if o.name == "preset")
    assert given("--preset") == preset and ("--no-nsp" in arm) == CORPUS_RECIPE["no_nsp"]
    assert float(given("--learning-rate")) == CORPUS_RECIPE["learning_rate"]
    assert float(given("--warmup-proportion")) == CORPUS_RECIPE["warmup_proportion"]
    assert s.trains_on(s.RECIPE) == "data-imdb" and "--instances" not in s.DATA["data-imdb"]   # pairs, T 128
    assert CORPUS_RECIPE["instances"] == "pairs"
    short = s.DATA[s.trains_on(s.RECIPE, "--short-data")]
    assert int(short[short.index("--max-seq-length") + 1]) == CORPUS_RECIPE["short_seq_length"]
    assert not {"--short-seq-share", "--new-positions", "--batch-size"} & set(arm)          # their defaults


def test_each_ablation_arm_is_one_knob_from_its_recipe():
    s = script()

    def knobs(arm):
        argv = s.ARMS[arm]
        return {argv[i]: argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else True
                for i in range(len(argv)) if argv[i].startswith("--")}

    old, hour = knobs("old"), knobs("tiny-mlm")
    assert len(set(old.items()) ^ set(hour.items())) == 2 * len(s.CHANGES)   # every knob differs, nothing else
    for old_value, new_value in s.CHANGES.values():
        assert len(set(knobs(f"old+{new_value}").items()) - set(old.items())) == 1
        assert len(set(knobs(f"hour-{old_value}").items()) - set(hour.items())) == 1
        assert set(knobs(f"old+{new_value}").items()) - set(old.items()) <= set(hour.items())
        assert set(knobs(f"hour-{old_value}").items()) - set(hour.items()) <= set(old.items())
    final = knobs(s.RECIPE)                                 # the ablation from the recipe, its short phase a change
    assert set(final.items()) - set(hour.items()) == {("--short-data", "{runs}/data-imdb-t64")}
    for old_value, _ in s.CHANGES.values():
        undone = set(knobs(f"recipe-{old_value}").items()) - set(final.items())
        assert len(undone) == 1 and undone <= set(old.items())
    assert set(knobs("old+short64").items()) - set(old.items()) == set(final.items()) - set(hour.items())


def test_each_screen_is_one_knob_added_to_the_hour_recipe_and_prepares_only_its_data(tmp_path):
    s = script()
    hour = s.ARMS["tiny-mlm"]
    screens = [arm for arm in s.ARMS if arm.startswith("hour+")]
    assert screens
    for arm in screens:
        assert s.ARMS[arm][:len(hour)] == hour
        added = s.ARMS[arm][len(hour):]
        assert added and added[0].startswith("--")
        assert added[0] != "--data" or added[1].split("/")[-1] in s.DATA
    r = s.Runner(str(tmp_path), 1)
    named = [c[0][1][c[0][1].index("--out") + 1] for c in s.prepare_commands(r, ["tiny-mlm", "hour+t64"], True)]
    assert named == [r.path("data-imdb"), r.path("data-imdb-t64")]             # data-imdb first: its vocabulary
    for arms in (["hour+short64"], ["hour+t64", "hour+short64"]):              # --short-data's data too, once
        named = [c[0][1][c[0][1].index("--out") + 1] for c in s.prepare_commands(r, arms, True)]
        assert named == [r.path("data-imdb"), r.path("data-imdb-t64")]


def test_a_run_made_in_two_invocations_places_its_evaluations_at_each_phases_cpu_minute():
    s = script()
    one = s.cpu_minute_of({"cpu_s": 600.0}, 100)                              # in proportion to the steps
    assert (one(0), one(50), one(100)) == (0.0, 5.0, 10.0)
    two = s.cpu_minute_of({"cpu_s": 900.0, "phases": [[90, 540.0], [100, 360.0]]}, 100)   # a long step: 36 s here
    assert (two(45), two(90), two(95), two(100)) == (4.5, 9.0, 12.0, 15.0)
    assert s.own_heldout("hour+short64") == ""                                 # evaluated on data-imdb's pairs
    marked = [{"curve_heldout": {"data": "data-imdb-t64", "until_step": 35235}}]
    assert s.own_heldout("hour+short64", marked) == " (its own held-out to step 35,235: t64)"
    assert s.own_heldout("hour+t64") == " (its own held-out: t64)"


def test_a_run_given_steps_is_planned_by_its_recorded_count(tmp_path):
    s = script()
    r = s.Runner(str(tmp_path), 1)
    os.makedirs(r.path("run-m60-s0", "checkpoint"))
    with open(r.path("run-m60-s0", "metrics.jsonl"), "w") as f:
        f.write(json.dumps({"kind": "train", "step": 1, "loss": 9.0}) + "\n")
    with open(r.path("run-m60-s0", "checkpoint", "training_state.json"), "w") as f:
        json.dump({"options": {"steps": 39150}}, f)
    assert s.run_plan(r, "run-m60-s0") == {"steps": 39150}
    with open(r.path("run-m60-s0", "metrics.jsonl"), "a") as f:
        f.write(json.dumps({"kind": "budget", "step": 0, "steps": 25017}) + "\n")
    assert s.run_plan(r, "run-m60-s0")["steps"] == 25017                         # a budget's plan wins


def between(path, start, end) -> str:
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    return text[text.index(start) + len(start):text.index(end)].strip("\n")


def prose(path, start, end) -> str:
    """The lines of a page's section that are neither a table, a code block nor a pasted report."""
    section, lines, code = between(path, start, end), [], False
    for line in section.splitlines():
        code = code != line.startswith("```")
        if not (code or line.startswith(("```", "|", "<!--", "`npbert"))):
            lines.append(line)
    return "\n".join(lines)


def test_the_page_quotes_only_figures_the_script_prints():
    """Every figure with a decimal point in the prose of the page's measured sections is one the
    script prints from the kept summaries: a rerun that changes it fails here until the prose is
    written again (figures worked out by hand, such as a difference, come from the script too)."""
    s = script()
    page = "docs/hour_recipe.md"
    text = prose(page, "## Against the targets", "## All of BLiMP") + prose(page, "## What mattered",
                                                                            "## What the measurements say")
    printed = "\n".join(table() for table in s.PAGE.values())
    figures = set(re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", text))
    assert len(figures) > 20                                           # the sections do quote the tables
    assert sorted(figures - set(re.findall(r"\d+\.\d+", printed))) == [], f"{page}: figures no table prints"


def test_the_page_and_readme_show_the_report_of_the_kept_summaries():
    s = script()
    page = "docs/hour_recipe.md"
    for name, table in s.PAGE.items():
        assert between(page, f"<!-- {name}: python benchmarks/hour_recipe.py report -->",
                       f"<!-- end of {name} -->") == table(), f"{page}: paste the script's {name}"
    assert between("README.md", "<!-- the hour: python benchmarks/hour_recipe.py report -->",
                   "<!-- end of the hour -->") == s.what_an_hour_buys(), "README: paste the script's table"


def test_fine_tuning_runs_at_each_learning_rate_and_each_side_is_compared_at_the_rate_its_dev_picks(tmp_path):
    """The finetune stage makes every run at each of FINETUNE_LRS (only the recipe's rate leaves the
    run's name as it was), and the report compares each side at its own best mean dev accuracy:
    here the pretrained side's dev picks 1e-3, the scratch side's 3e-4 (where its test accuracy
    would pick 1e-3), and the test gain is paired by seed between those two."""
    s = script()
    from linguistics_results import finetune_run_name      # on the path hour_recipe.py puts it on
    r = s.Runner(str(tmp_path), 1)
    for seed in (0, 1):
        os.makedirs(r.path(f"{s.RECIPE}-m60-s{seed}", "checkpoint"))
        os.makedirs(r.path("done"), exist_ok=True)
        with open(r.path("done", f"{s.RECIPE}-m60-s{seed}.json"), "w") as f:
            json.dump({"cpu_s": 1, "wall_s": 1}, f)
    commands = s.finetune_commands(r, s.RECIPE, 60, quick=False)
    outs = [os.path.basename(argv[argv.index("--out") + 1]) for _, argv, _ in commands]
    assert len(outs) == len(set(outs)) == 3 * 2 * 5 * 2
    assert {(o.rsplit("-lr", 1)[1] if "-lr" in o else s.FINETUNE_LR) for o in outs} == set(s.FINETUNE_LRS)
    for _, argv, _ in commands:
        out = os.path.basename(argv[argv.index("--out") + 1])
        assert argv[argv.index("--learning-rate") + 1] == (out.rsplit("-lr", 1)[1] if "-lr" in out else s.FINETUNE_LR)
    dev = {("pretrained", "1e-4"): 0.70, ("pretrained", "3e-4"): 0.74, ("pretrained", "1e-3"): 0.75,
           ("scratch", "1e-4"): 0.70, ("scratch", "3e-4"): 0.75, ("scratch", "1e-3"): 0.73}
    tuned = {}
    for lr in s.FINETUNE_LRS:
        for k in range(5):
            for side in (f"pretrained-{s.RECIPE}-m60", "scratch"):
                kind = side.split("-")[0]
                test = dev[kind, lr] + (0.01 * k + 0.005 if kind == "pretrained" else 0.05 * (lr == "1e-3"))
                tuned[finetune_run_name(side, "all", k, lr)] = [dev[kind, lr], test]
    results = tmp_path / "results"
    os.makedirs(results / "finetune")
    (results / "finetune" / "rt-polarity.json").write_text(json.dumps(tuned))
    rows = s.finetune_by_learning_rate(str(results)).splitlines()[2:]
    assert [row.split(" | ")[2] for row in rows] == [*s.FINETUNE_LRS, "picked on dev: 1e-3 / 3e-4"]
    picked = rows[-1].split(" | ")
    assert picked[7:] == ["2.5 ± 1.6", "5 of 5 |"]          # 75.5 + k against 75: 0.5 ... 4.5 points
    at_recipe = rows[1].split(" | ")
    assert at_recipe[7:] == ["1.5 ± 1.6", "4 of 5 |"]       # 74.5 + k against 75: -0.5 ... 3.5
    assert s.finetune_by_learning_rate(str(tmp_path / "none")) == "(no fine-tuning run summarized)"
