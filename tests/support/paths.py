"""Where the repository's parts are, for a test module at any depth under tests/: the repository's
root, tests/ itself and tests/fixtures/ (the files the tests compare against)."""
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
