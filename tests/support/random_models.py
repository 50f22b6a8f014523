"""Randomly initialised BERTs saved as checkpoints with the built-in vocabulary: what the tests of
fine-tuning, reading, locking and the CLI's errors start from when the real checkpoint's size is
not the point."""
import numpy as np
import pytest

from npbert.checkpoint import save_pretrained
from npbert.config import BertConfig
from npbert.data.builtin_vocab import builtin_vocab
from npbert.heads.params import finetuned_config, init_head
from npbert.heads.registry import HEADS
from npbert.model_params import init_params
from npbert.tasks.registry import TASKS
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


def random_finetuned(directory, kind, labels):
    """A 1-layer hidden-16 BERT with a random `kind` head and these label names, saved to directory."""
    tokenizer = BertTokenizer(builtin_vocab())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128)
    rng = np.random.default_rng(0)
    params = init_params(config, rng, heads=False)
    params.update(init_head(config, HEADS[kind], len(labels) if labels else 2, rng))
    save_pretrained(str(directory), finetuned_config(config, HEADS[kind], labels), params, tokenizer)
    return str(directory)


SENTENCE_TASK = ["--task", "builtin-sentence"]       # what sentence_model was fine-tuned for


@pytest.fixture(scope="module")
def sentence_model(tmp_path_factory):
    return random_finetuned(tmp_path_factory.mktemp("sentence"), "sequence_classification",
                            TASKS["builtin-sentence"].labels)


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    return random_finetuned(tmp_path_factory.mktemp("tagger"), "token_classification", TASKS["builtin-tagging"].labels)


@pytest.fixture(scope="module")
def pretrained_model(tmp_path_factory):
    """A 1-layer hidden-16 BERT with random MLM and NSP heads, as `npbert pretrain` saves one."""
    tokenizer = BertTokenizer(builtin_vocab())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    directory = str(tmp_path_factory.mktemp("pretrained") / "m")
    save_pretrained(directory, config, init_params(config, np.random.default_rng(0), heads=True), tokenizer)
    return directory
