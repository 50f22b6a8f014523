"""docs/linguistics.md's figures come from benchmarks/linguistics_results.py. Its --quick mode (a
40-step default run, 20 built-in pairs a paradigm) runs the pretrain, blimp and report stages
end to end here; the full sweep takes hours and is not a test."""
import os
import re

from support.paths import ROOT
from support.scripts import load_script


def script():
    return load_script("benchmarks/linguistics_results.py")


def test_the_quick_sweep_pretrains_scores_and_reports(tmp_path, capsys):
    s = script()
    runs = str(tmp_path / "runs")
    assert s.main(["--quick", "--runs", runs, "--jobs", "1", "pretrain", "blimp", "report"]) == 0
    out = capsys.readouterr().out
    assert "npbert pretrain --out" in out and "npbert minimal-pairs" in out
    table = out[out.index("builtin, by paradigm"):].splitlines()
    assert table[2] == "| group | pairs | BERT default (1 seed) | random-init | unigram | 3-gram |"
    rows = [line for line in table if line.startswith("| transitive |")]
    assert len(rows) == 1 and rows[0].split("|")[2].strip() == "20"
    assert os.path.exists(os.path.join(runs, "done", "pretrain-default-s0.json"))
    assert s.main(["--quick", "--runs", runs, "--jobs", "1", "pretrain", "blimp"]) == 0     # all kept
    assert "npbert" not in capsys.readouterr().out


def test_the_report_gives_mean_and_sd_over_seeds():
    s = script()
    assert s.mean_sd([0.5, 0.6, 0.7]) == "60.0 ± 10.0" and s.mean_sd([0.25]) == "25.0" and s.mean_sd([]) == "-"


def test_the_scoring_benchmark_measures_and_projects(tmp_path, capsys):
    """benchmarks/pll_speed.py on the built-in pairs with a random tiny model: it scores the sample,
    measures this machine's GEMM and projects the whole set from what it measured."""
    from npbert.data.builtin_vocab import builtin_vocab
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(builtin_vocab()) + "\n")
    bench = load_script("benchmarks/pll_speed.py")
    assert bench.main(["builtin", "--preset", "tiny", "--vocab-file", str(vocab), "--per-paradigm", "3", "--profile"]) == 0
    out = capsys.readouterr().out
    assert "builtin: 1,500 pairs" in out and "scored 18 pairs (3 a paradigm)" in out
    assert "float32 GEMM" in out and "the whole set at this speed:" in out
    assert "where the scoring's CPU time went" in out and "matmul" in out


def test_the_scoring_speed_section_quotes_only_what_the_kept_runs_printed():
    """Every figure of docs/linguistics.md's "Scoring speed" with a decimal point or a thousands
    comma is in the outputs of pll_speed.py kept in benchmarks/results/pll_speed/: a figure typed
    by hand, or one a rerun no longer gives, fails here."""
    page = (ROOT / "docs" / "linguistics.md").read_text()
    section = page[page.index("### Scoring speed"):page.index("### Not measured yet")]
    kept = "\n".join(p.read_text() for p in sorted((ROOT / "benchmarks" / "results" / "pll_speed").glob("*.txt")))
    number = r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+\.\d+)(?![\w.,]?\d)"
    figures = set(re.findall(number, section))
    assert len(figures) > 20                                           # the section does quote the runs
    assert sorted(figures - set(re.findall(number, kept))) == []


def test_the_report_correlates_paradigm_accuracies_with_each_baseline(tmp_path):
    """agreement_lines: Pearson's r over paradigms of the seeds' mean BERT accuracy with each
    baseline's; here the BERT follows unigram exactly (r = +1), 3-gram inversely (r = -1), and random
    by hand: deviations (-0.233, 0.067, 0.167) and (0, -0.4, 0.4), r = 0.04 / (0.294 * 0.566) = 0.24."""
    import json
    s = script()
    scores = tmp_path / "scores"
    scores.mkdir()
    for seed, shift in ((0, 0.0), (1, 0.1)):
        groups = [{"level": "paradigm", "name": f"p{i}", "pairs": 10,
                   "accuracy": {"bert": a + shift, "random": [0.5, 0.1, 0.9][i], "unigram": a, "3-gram": 1 - a}}
                  for i, a in enumerate((0.2, 0.5, 0.6))]
        (scores / f"blimp-default-s{seed}.json").write_text(json.dumps({"groups": groups}))
    s.ONLY = ["default"]
    try:
        lines = s.agreement_lines(s.Runner(str(tmp_path), 1), quick=False)
    finally:
        s.ONLY = None
    assert lines == ["\nblimp, default: Pearson's r of the BERT's 3 paradigm accuracies with random +0.24, "
                     "unigram +1.00, 3-gram -1.00"]


def test_the_probe_tables_keep_each_model_apart(tmp_path):
    """Two budgets' probes are two tables, each the mean over its own seeds: pooling them would give
    a mean of models that answer different questions."""
    import json
    s = script()
    (tmp_path / "probes").mkdir()
    for name, accuracy in (("imdb-1200", (0.5, 0.7)), ("imdb-4800", (0.9, 0.9))):
        for seed, a in enumerate(accuracy):
            layers = {m: [{"test_accuracy": a if m == "pretrained" else 0.6}] for m in ("pretrained", "random-init")}
            run = {"majority": ["test", 1, 0.5], "layers": layers}
            (tmp_path / "probes" / f"rt-polarity-{name}-s{seed}.json").write_text(json.dumps(run))
    lines = s.probe_lines(s.Runner(str(tmp_path), 1), quick=False)
    tables = "\n".join(lines).split("\nprobe ")[1:]
    assert [t.splitlines()[0].split(":")[0] for t in tables] == ["rt-polarity, imdb-1200 (2 seeds)",
                                                               "rt-polarity, imdb-4800 (2 seeds)"]
    assert tables[0].splitlines()[-1] == "| 0 | 60.0 ± 14.1 | 60.0 ± 0.0 |"
    assert tables[1].splitlines()[-1] == "| 0 | 90.0 ± 0.0 | 60.0 ± 0.0 |"


def test_the_fine_tuning_gain_is_paired_by_seed(tmp_path):
    """Pretrained seeds 0 and 2 against from-scratch seeds 0, 1 and 2: the gain pairs seed with seed
    (0.70 - 0.60 and 0.80 - 0.65), never the second run of one side with the second of the other;
    an unfinished run (no test row) counts on neither side."""
    import json
    s = script()
    runs = {("pretrained", 0): (0.72, 0.70), ("pretrained", 2): (0.81, 0.80), ("pretrained", 1): (0.9, None),
            ("scratch", 0): (0.61, 0.60), ("scratch", 1): (0.5, 0.50), ("scratch", 2): (0.66, 0.65)}
    for (kind, k), (dev, test) in runs.items():
        d = tmp_path / "finetune" / f"{kind}{'-imdb-4800' * (kind == 'pretrained')}-n500-s{k}"
        d.mkdir(parents=True)
        rows = [{"kind": "eval", "accuracy": dev - 0.1}, {"kind": "eval", "accuracy": dev}]
        rows += [{"kind": "test", "accuracy": test}] if test is not None else []
        (d / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    lines = s.finetune_lines(s.Runner(str(tmp_path), 1), quick=False)
    assert lines[-1] == "| imdb-4800 | 500 | 76.5 ± 6.4 (2) | 75.0 ± 7.1 (2) | 59.0 ± 8.2 (3) | 58.3 ± 7.6 (3) | 12.5 ± 3.5 | 2 of 2 |"
    assert len(lines) == 4 and lines[1].startswith("| pretrained | training sentences | pretrained dev")


def test_a_baseline_some_seeds_left_out_is_the_mean_of_those_that_have_it(tmp_path):
    """--baselines unigram,ngram for seeds 1 and 2 (the whole BLiMP without the random twin): the
    random-init column says over how many seeds it is, and the correlation line leaves it out when
    no seed has it."""
    import json
    s = script()
    (tmp_path / "scores").mkdir()
    for seed in (0, 1, 2):
        accuracy = {"bert": 0.6 + seed / 10, "unigram": 0.5, "3-gram": 0.55}
        if seed == 0:
            accuracy["random"] = 0.45
        groups = [{"level": "overall", "name": "overall", "pairs": 30, "accuracy": accuracy}]
        (tmp_path / "scores" / f"blimp-default-s{seed}.json").write_text(json.dumps({"groups": groups}))
    s.ONLY = ["default"]
    try:
        rows = s.blimp_table(s.Runner(str(tmp_path), 1), False, "blimp", "overall")
        assert rows[0].startswith("| group | pairs | BERT default (3 seeds) | random-init (1 seed) | unigram | 3-gram |")
        assert rows[2].startswith("| overall | 30 | 70.0 ± 10.0 | 45.0 | 50.0 ± 0.0 | 55.0 ± 0.0 |")
        for seed in (1, 2):
            path = tmp_path / "scores" / f"blimp-default-s{seed}.json"
            run = json.loads(path.read_text())
            run["groups"] = [dict(g, level="paradigm", name=f"p{i}", accuracy={"bert": 0.1 * i + seed / 10,
                             "unigram": 0.1 * i, "3-gram": 0.3 - 0.1 * i}) for i, g in enumerate(run["groups"] * 3)]
            path.write_text(json.dumps(run))
        (tmp_path / "scores" / "blimp-default-s0.json").unlink()
        lines = s.agreement_lines(s.Runner(str(tmp_path), 1), quick=False)
    finally:
        s.ONLY = None
    assert lines == ["\nblimp, default: Pearson's r of the BERT's 3 paradigm accuracies with unigram +1.00, 3-gram -1.00"]


def test_fine_tuning_starts_from_each_asked_mini_and_from_scratch_once():
    """imdb-4800 and imdb-lr1e-3 are fine-tuned from (5 seeds x 2 label counts each, fine-tuning
    seed k from pretraining seed k mod 3), imdb-1200 is not, and the from-scratch runs they are
    both compared with are made once."""
    s = script()
    s.ONLY = ["imdb-1200", "imdb-4800", "imdb-lr1e-3"]
    try:
        commands = s.finetune_commands(s.Runner("/runs", 1), quick=False)
        pretrain = dict(s.models(False))
    finally:
        s.ONLY = None
    outs = [argv[argv.index("--out") + 1].rsplit("/", 1)[1] for _, argv, _ in commands]
    assert len(outs) == len(set(outs)) == 30
    assert sorted({o.rsplit("-n", 1)[0] for o in outs}) == ["pretrained-imdb-4800", "pretrained-imdb-lr1e-3", "scratch"]
    argv = next(argv for _, argv, _ in commands if argv[argv.index("--out") + 1].endswith("pretrained-imdb-lr1e-3-n500-s4"))
    assert argv[argv.index("--model") + 1] == "/runs/imdb-lr1e-3-s1/checkpoint" and "41" in argv
    assert pretrain["imdb-lr1e-3"][-2:] == ["--stop-after", "4000"] and "1e-3" in pretrain["imdb-lr1e-3"]


def test_a_sample_of_blimp_and_the_whole_keep_their_own_scores(tmp_path):
    """--per-paradigm 100 scores go to blimp100-*, all of BLiMP's to blimp-*, in one --runs directory,
    and the report of each reads its own (here the sample at 60 %, the whole at 50 %)."""
    import json
    s = script()
    r = s.Runner(str(tmp_path), 1)
    s.ONLY = ["imdb-4800"]
    try:
        for sample, accuracy in ((100, 0.6), (None, 0.5)):
            s.PER_PARADIGM = sample
            blimp = [c for c in s.blimp_commands(r, False, "/blimp/data") if "/blimp/data" in c[1]]
            assert [os.path.basename(c[0]) for c in blimp] == [f"blimp{sample or ''}-imdb-4800-s{k}.json" for k in (0, 1, 2)]
            assert ("--per-paradigm" in blimp[0][1]) == (sample is not None)
            groups = [{"level": "overall", "name": "overall", "pairs": 10, "accuracy": {"bert": accuracy}}]
            os.makedirs(os.path.dirname(blimp[0][0]), exist_ok=True)
            with open(blimp[0][0], "w") as f:
                json.dump({"groups": groups}, f)
        for sample, figure in ((100, "60.0"), (None, "50.0")):
            s.PER_PARADIGM = sample
            assert s.blimp_table(r, False, s.blimp_tag(False), "overall")[2].startswith(f"| overall | 10 | {figure} |")
    finally:
        s.ONLY, s.PER_PARADIGM = None, None


def test_a_baseline_the_last_model_left_out_comes_from_the_one_before(tmp_path):
    """imdb-lr1e-3 scored without its random twin (the twin of seed 0 is imdb-4800's: same size, same
    seed): the random-init column is imdb-4800's, not dropped."""
    import json
    s = script()
    (tmp_path / "scores").mkdir()
    for name, accuracy in (("imdb-4800", {"bert": 0.5, "random": 0.45, "unigram": 0.4}),
                           ("imdb-lr1e-3", {"bert": 0.6, "unigram": 0.4})):
        groups = [{"level": "overall", "name": "overall", "pairs": 30, "accuracy": accuracy}]
        (tmp_path / "scores" / f"blimp-{name}-s0.json").write_text(json.dumps({"groups": groups}))
    s.ONLY = ["imdb-4800", "imdb-lr1e-3"]
    try:
        rows = s.blimp_table(s.Runner(str(tmp_path), 1), False, "blimp", "overall")
    finally:
        s.ONLY = None
    assert rows[0].startswith("| group | pairs | BERT imdb-4800 (1 seed) | BERT imdb-lr1e-3 (1 seed) | random-init | unigram |")
    assert rows[2].startswith("| overall | 30 | 50.0 | 60.0 | 45.0 | 40.0 |")
