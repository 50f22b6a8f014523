"""docs/hour_recipe.md's tables come from benchmarks/hour_recipe.py: its pipeline (prepare both
kinds of data, pretrain arms on a budget, summarize, report) end to end on 200 built-in stories,
and the page holds the report of the summaries kept in benchmarks/results/hour_recipe/."""
import json
import os

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
    table = out[out.index("| arm |"):].splitlines()
    assert [row.split(" | ")[0] for row in table[2:]] == ["| tiny-mlm", "| tiny-sentences"]
    for name in ("tiny-mlm-m0.2-s0", "tiny-sentences-m0.2-s0"):
        with open(os.path.join(results, f"{name}.json")) as f:
            run = json.load(f)
        assert run["plan"]["steps"] >= 1 and 0 <= run["heldout_mlm"] <= 1 and run["cpu_s"] > 0
        assert run["curve"] == sorted(run["curve"], key=lambda c: c["step"])
    with open(os.path.join(results, "tiny-sentences-m0.2-s0.json")) as f:
        assert json.load(f)["options"]["instances"] == "sentences"
    assert s.main(["run", "tiny-mlm", "--quick", "--minutes", "0.2", "--runs", runs, "--jobs", "1"]) == 0
    assert "npbert pretrain" not in capsys.readouterr().out                 # a finished run is not run again


def test_the_page_shows_the_report_of_the_kept_summaries():
    report = script().report()
    page = open(os.path.join(ROOT, "docs", "hour_recipe.md"), encoding="utf-8").read()
    assert report in page, "docs/hour_recipe.md's table is not `python benchmarks/hour_recipe.py report`'s"
