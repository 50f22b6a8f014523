"""The repository's scripts (benchmarks/, demos/) loaded as modules, so that a test calls their
functions as their command line would."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_script(relative_path: str, name: str | None = None):
    """benchmarks/x.py (a path from the repository's root) as a module named `name` (default: its stem)."""
    path = ROOT / relative_path
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
