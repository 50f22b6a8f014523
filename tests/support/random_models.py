"""Randomly initialised BERTs saved as checkpoints with the built-in vocabulary: what the tests of
fine-tuning, reading, locking and the CLI's errors start from when the real checkpoint's size is
not the point."""
import numpy as np
import pytest

from npbert.checkpoint import save_pretrained
from npbert.config import BertConfig
from npbert.data.builtin_vocab import builtin_vocab
from npbert.model import init_params
from npbert.tokenizer import BertTokenizer


def random_checkpoint(directory, layers, hidden):
    """Save a randomly initialised BERT (2 heads, FFN 2 x hidden) with the built-in vocabulary."""
    tokenizer = BertTokenizer(builtin_vocab())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=2, intermediate_size=2 * hidden, max_position_embeddings=128)
    save_pretrained(directory, config, init_params(config, np.random.default_rng(0), heads=False), tokenizer)
    return directory


@pytest.fixture(scope="module")
def micro(tmp_path_factory):
    """A randomly initialised 1-layer BERT (hidden 32) with the built-in vocabulary, as a checkpoint."""
    return random_checkpoint(str(tmp_path_factory.mktemp("micro")), layers=1, hidden=32)
