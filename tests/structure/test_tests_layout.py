"""The tests' own layout: tests/ itself holds conftest.py and folders only. A folder per part of
npbert (model/, kernels/, tokenizer/, ...; its __init__.py says what it covers) holds only test
modules; what the tests import and the scripts about the suite live in tests/support/, the files
they compare against in tests/fixtures/, the scripts that made those in tests/reference/. No test
module is over 500 lines, so a reader finds a test by its folder and file name and can read the file
whole. A file that grows past the limit is split by subject."""
from pathlib import Path

from support.paths import TESTS

MAX_LINES = 500
NOT_TESTS = ("support", "fixtures", "reference")        # the folders of tests/ that hold no test module


def folders_of_tests(tests: Path) -> list:
    """The folders of tests that hold test modules (all but NOT_TESTS, caches and hidden ones)."""
    return sorted(p for p in tests.iterdir() if p.is_dir() and p.name not in NOT_TESTS
                  and p.name != "__pycache__" and not p.name.startswith("."))


def stray_files(folder: Path) -> list:
    """The files directly in folder that are neither a test module, conftest.py nor __init__.py."""
    return sorted(p.name for p in folder.iterdir() if p.is_file() and not (
        p.name in ("conftest.py", "__init__.py") or (p.name.startswith("test_") and p.suffix == ".py")))


def long_modules(folder: Path) -> dict:
    """{name: lines} of the modules directly in folder longer than MAX_LINES."""
    lines = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in sorted(folder.glob("*.py"))}
    return {name: n for name, n in lines.items() if n > MAX_LINES}


def test_the_tests_folder_holds_only_test_modules_and_conftest():
    top = sorted(p.name for p in TESTS.iterdir() if p.is_file())
    assert top == ["conftest.py"], f"tests/ holds conftest.py and folders only, not {top}: a test module goes in " \
                                   "the folder of what it tests, anything else in tests/support/"
    strays = [f"{folder.name}/{name}" for folder in folders_of_tests(TESTS) for name in stray_files(folder)]
    assert not strays, f"not a test module: {strays}; move it to tests/support/"
    # the same file name in two folders (test_commands.py, ...) imports as two modules: folder.test_name
    assert all((folder / "__init__.py").is_file() for folder in folders_of_tests(TESTS))


def test_no_test_module_is_over_500_lines():
    long = {f"{folder.name}/{name}": n for folder in folders_of_tests(TESTS)
            for name, n in long_modules(folder).items()}
    assert not long, f"over {MAX_LINES} lines, split by subject: {long}"


def test_the_checks_see_what_they_look_for(tmp_path):
    for name in ("conftest.py", "__init__.py", "test_short.py", "helpers.py", "notes.txt"):
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "test_long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    for name in ("support", "model", "__pycache__"):
        (tmp_path / name).mkdir()                                        # a folder is not a stray file
    assert stray_files(tmp_path) == ["helpers.py", "notes.txt"]
    assert long_modules(tmp_path) == {"test_long.py": MAX_LINES + 1}
    assert folders_of_tests(tmp_path) == [tmp_path / "model"]
