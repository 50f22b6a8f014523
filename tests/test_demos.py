"""Every demo in demos/ runs as a student would run it (`python demos/NN_name.py`), exits 0
and says "all checks passed" - the demos assert their own numbers as they go."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMOS = sorted((ROOT / "demos").glob("[0-9][0-9]_*.py"))


def test_demos_exist_and_are_listed_in_the_readme():
    assert len(DEMOS) >= 10
    readme = (ROOT / "demos" / "README.md").read_text(encoding="utf-8")
    for demo in DEMOS:
        assert demo.name in readme, f"{demo.name} is not in demos/README.md"


@pytest.mark.parametrize("demo", DEMOS, ids=[d.stem for d in DEMOS])
def test_demo_runs_and_checks_itself(demo):
    proc = subprocess.run([sys.executable, str(demo)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{demo.name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert proc.stdout.rstrip().endswith("all checks passed"), f"{demo.name}:\n{proc.stdout[-2000:]}"
