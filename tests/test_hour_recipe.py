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
    table, whole = out[out.index("| arm |"):].split("\n\n")[:2]
    assert [row.split(" | ")[0] for row in table.splitlines()[2:]] == ["| tiny-mlm", "| tiny-sentences"]
    assert whole.strip() == "(no run scored on all of BLiMP)"                 # the quick runs are 0.2 minutes
    for name in ("tiny-mlm-m0.2-s0", "tiny-sentences-m0.2-s0"):
        with open(os.path.join(results, f"{name}.json")) as f:
            run = json.load(f)
        assert run["plan"]["steps"] >= 1 and 0 <= run["heldout_mlm"] <= 1 and run["cpu_s"] > 0
        assert run["curve"] == sorted(run["curve"], key=lambda c: c["step"])
    with open(os.path.join(results, "tiny-sentences-m0.2-s0.json")) as f:
        assert json.load(f)["options"]["instances"] == "sentences"
    assert s.main(["run", "tiny-mlm", "--quick", "--minutes", "0.2", "--runs", runs, "--jobs", "1"]) == 0
    assert "npbert pretrain" not in capsys.readouterr().out                 # a finished run is not run again


def between(path, start, end) -> str:
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    return text[text.index(start) + len(start):text.index(end)].strip("\n")


def test_the_page_and_readme_show_the_report_of_the_kept_summaries():
    s = script()
    assert between("docs/hour_recipe.md", "<!-- the table: python benchmarks/hour_recipe.py report -->",
                   "<!-- end of the table -->") == s.report(), "docs/hour_recipe.md: paste the script's report"
    assert between("docs/hour_recipe.md", "<!-- all of BLiMP: python benchmarks/hour_recipe.py report -->",
                   "<!-- end of all of BLiMP -->") == s.whole_blimp(), "docs/hour_recipe.md: paste the whole BLiMP"
    assert between("README.md", "<!-- the hour: python benchmarks/hour_recipe.py report --arm tiny-mlm --minutes 60 -->",
                   "<!-- end of the hour -->") == s.report(arm="tiny-mlm", minutes=60), "README: paste the report"
