"""The CLI on bad input: one line `npbert CMD: error: ...` naming the file or option and what is
wrong, exit 2; never a traceback, never silent nonsense. Checkpoints here are random (a tiny
model with a random head, saved as `npbert finetune` saves): the errors do not need training."""
import re

import numpy as np
import pytest

from npbert.checkpoint import save_pretrained
from npbert.cli import main
from npbert.config import BertConfig
from npbert.data.builtin_corpus import builtin_vocab
from npbert.model import init_params
from npbert.task_models import finetuned_config, init_head
from npbert.tasks.registry import TASKS
from npbert.tokenization import BertTokenizer


def random_finetuned(directory, kind, labels):
    """A 1-layer hidden-16 BERT with a random `kind` head and these label names, saved to directory."""
    tokenizer = BertTokenizer(builtin_vocab())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128)
    rng = np.random.default_rng(0)
    params = init_params(config, rng, heads=False)
    params.update(init_head(config, kind, len(labels) if labels else 2, rng))
    save_pretrained(str(directory), finetuned_config(config, kind, labels), params, tokenizer)
    return str(directory)


@pytest.fixture(scope="module")
def sentence_model(tmp_path_factory):
    return random_finetuned(tmp_path_factory.mktemp("sentence"), "sequence_classification",
                            TASKS["builtin-sentence"].labels)


def one_error_line(capsys, command):
    """The one stderr line of a failed command, checked to be `npbert COMMAND: error: ...`."""
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"npbert {command}: error: "), err
    return err


# --- predict --input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("content, expected", [
    (b"caf\xe9 au lait\n", r"in.bin:1: not UTF-8 text \(byte b'\\xe9'\)"),
    (b"ok\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"in.bin:4: not UTF-8 text \(a NUL byte"),   # a PNG
])
def test_predict_on_a_binary_file_names_it(sentence_model, tmp_path, capsys, content, expected):
    path = tmp_path / "in.bin"
    path.write_bytes(content)
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(path)]) == 2
    assert re.search(expected, one_error_line(capsys, "predict"))


def test_predict_on_a_directory_or_a_missing_file(sentence_model, tmp_path, capsys):
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(tmp_path)]) == 2
    assert f"input file {tmp_path} is a directory, not a file" in one_error_line(capsys, "predict")
    missing = str(tmp_path / "missing.txt")
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", missing]) == 2
    assert f"input file not found: {missing}" in one_error_line(capsys, "predict")


def test_predict_output_that_cannot_be_written(sentence_model, tmp_path, capsys):
    (tmp_path / "in.txt").write_text("Anna bakes bread.\n")
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(tmp_path / "in.txt"),
                 "--output", str(tmp_path)]) == 2
    assert f"cannot write --output {tmp_path}: Is a directory" in one_error_line(capsys, "predict")
