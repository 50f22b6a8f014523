"""docs/linguistics.md's figures come from benchmarks/linguistics_results.py. Its --quick mode (a
40-step default run, 20 built-in pairs a paradigm) runs the pretrain, blimp and report stages
end to end here; the full sweep takes hours and is not a test."""
import os

from scripts import load_script


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
