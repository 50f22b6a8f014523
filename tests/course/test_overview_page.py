"""docs/overview.md, the picture before the parts: its figure is the one demos/draw_overview.py
draws (from a model's own weight shapes), every box of the figure has a row linking its page, demo
and code, every link leads to a file, and the course starts there."""
import re
import subprocess
import sys

import pytest

from npbert import plotting
from support.patience import HANG_SECONDS
from support.paths import ROOT

SCRIPT = ROOT / "demos" / "draw_overview.py"
PAGE = ROOT / "docs" / "overview.md"
BOXES = ["tokens", "three embeddings", "multi-head self-attention", "add & norm", "feed-forward",
         "L x encoder layer", "pooler + NSP head", "MLM head"]


def draw(*args, cwd=ROOT):
    r = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd,
                       timeout=HANG_SECONDS)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return r.stdout


def test_the_text_form_has_every_box_with_the_models_shapes():
    out = draw("base")
    assert out.startswith("BERT's data flow, the base preset: L = 12 layers, H = 768, A = 12 heads, I = 3072")
    for box in ("tokens", "three embeddings, summed, LayerNorm", "12 x encoder layer {", "multi-head self-attention",
                "add & norm", "feed-forward", "pooler + NSP head", "MLM head"):
        assert box in out, box
    assert "word 30522x768 + position 512x768 + token type 2x768" in out and "3072x768, GELU, 768x3072" in out
    assert "(M, 30522)" in out and "(not in this model)" not in out


def test_a_checkpoint_is_drawn_from_its_own_weights(bert_dir):
    """MiniLM (or the small random BERT without it): no MLM or NSP head, and the figure says so."""
    out = draw(bert_dir)
    assert f"the checkpoint {bert_dir}" in out and out.count("(not in this model)") == 2


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), "huge"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == "draw_overview.py: error: 'huge' is neither a preset (tiny, mini, small, medium, " \
                               "base, large) nor a directory"


def test_the_figure_is_the_scripts_and_small(tmp_path):
    committed = ROOT / "docs" / "overview.png"
    assert plotting.drawn_by_npbert(committed) and committed.stat().st_size < 150_000
    if plotting.load_pyplot() is None:
        pytest.skip("matplotlib is not installed (pip install 'npbert[plot]'): the text form only")
    out = tmp_path / "overview.png"
    assert f"wrote {out}" in draw("base", "--out", str(out))
    assert plotting.drawn_by_npbert(out) and out.stat().st_size < 150_000


def test_every_box_has_a_row_and_every_link_leads_somewhere():
    page = PAGE.read_text(encoding="utf-8")
    assert "python demos/draw_overview.py base --out docs/overview.png" in page and "](overview.png)" in page
    rows = {line.split("|")[1].strip(): line for line in page.splitlines() if line.startswith("| ")}
    for box in BOXES:
        row = rows[box]
        cells = [c.strip() for c in row.split("|")[2:5]]
        assert all("](" in c for c in cells), f"{box}: a derivation, a demo and code each: {row}"
    for target in re.findall(r"\]\(([^)#]+)\)", page):
        assert (PAGE.parent / target).exists(), target


def test_the_course_starts_with_the_picture():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    learn = readme[readme.index("## Learn BERT"):]
    assert re.findall(r"\]\(([^)]+)\)", learn)[0] == "docs/overview.md"
    course = (ROOT / "demos" / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"\]\(([^)]+)\)", course)[0] == "../docs/overview.md"
