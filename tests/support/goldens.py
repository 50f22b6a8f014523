"""The goldens the golden tests share, written once per session (they take a while): `npbert
golden`'s files, npbert's own port's results, the broken ports' and broken optimizers' reports
(tests/support/broken_ports.py), and how a test edits a copy of them and reads one case's verdict.
Registered in tests/conftest.py (pytest_plugins), so the fixtures are one per session."""
import json
import os
import re
import shutil

import pytest

from npbert.golden import conform, schema
from npbert.golden.write import write_goldens
from support import broken_ports


@pytest.fixture(scope="session")
def golden(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("golden") / "golden")
    write_goldens(directory)
    return directory


@pytest.fixture(scope="session")
def own_results(golden, tmp_path_factory):
    """npbert's own port; linear and bert_for_pretraining written as one .npy per tensor."""
    directory = str(tmp_path_factory.mktemp("results"))
    broken_ports.write_port_results(directory, as_npy=("linear", "bert_for_pretraining"))
    return directory


@pytest.fixture(scope="session")
def broken(golden, tmp_path_factory):
    return broken_ports.broken_reports(golden, str(tmp_path_factory.mktemp("broken")))


def copy_results(own_results, tmp_path):
    directory = str(tmp_path / "results")
    shutil.copytree(own_results, directory)
    return directory


def conform_case(golden, results, case):
    return conform.conform(golden, results, only=[case])[0]


def edited_golden(golden, tmp_path, edit):
    """A copy of the goldens whose manifest edit(manifest) changed (or replaced: its return value)."""
    other = str(tmp_path / "edited")
    shutil.copytree(golden, other)
    path = os.path.join(other, schema.MANIFEST)
    manifest = json.load(open(path))
    manifest = edit(manifest) or manifest
    with open(path, "w") as f:
        f.write(manifest if isinstance(manifest, str) else json.dumps(manifest))
    return other


VERDICT = re.compile(r"PASS|MISSING: .+|FAIL: first differs at `(?P<name>[^`]+)` \((?P<where>[^)]+)\): (?P<detail>.+)")


@pytest.fixture(scope="session")
def broken_optimizers_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("broken_optimizers"))


@pytest.fixture(scope="session")
def broken_optimizers(golden, broken_optimizers_dir):
    return broken_ports.broken_optimizer_reports(golden, broken_optimizers_dir)
