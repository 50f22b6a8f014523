"""The tests' own layout: tests/ itself holds only test modules and conftest.py (what the
tests import and the scripts about the suite live in tests/support/, the scripts that made the
fixtures in tests/reference/), and no test module is over 500 lines, so a reader finds a test by
its file's name and can read the file whole. A file that grows past the limit is split by subject."""
from pathlib import Path

from support.paths import TESTS

MAX_LINES = 500


def stray_files(folder: Path) -> list:
    """The files directly in folder that are neither a test module nor conftest.py."""
    return sorted(p.name for p in folder.iterdir() if p.is_file() and not (
        p.name == "conftest.py" or (p.name.startswith("test_") and p.suffix == ".py")))


def long_modules(folder: Path) -> dict:
    """{name: lines} of the modules directly in folder longer than MAX_LINES."""
    lines = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in sorted(folder.glob("*.py"))}
    return {name: n for name, n in lines.items() if n > MAX_LINES}


def test_the_tests_folder_holds_only_test_modules_and_conftest():
    assert not stray_files(TESTS), f"not a test module: {stray_files(TESTS)}; move it to tests/support/"


def test_no_test_module_is_over_500_lines():
    assert not long_modules(TESTS), f"over {MAX_LINES} lines, split by subject: {long_modules(TESTS)}"


def test_the_checks_see_what_they_look_for(tmp_path):
    for name in ("conftest.py", "test_short.py", "helpers.py", "notes.txt"):
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "test_long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "support").mkdir()                                     # a folder is not a stray file
    assert stray_files(tmp_path) == ["helpers.py", "notes.txt"]
    assert long_modules(tmp_path) == {"test_long.py": MAX_LINES + 1}
