"""A prepared-data directory as a user or another tool may leave it: manifest.json with fields
replaced by any JSON value or left out, a shard of zero bytes, a vocab_size the vocabulary does
not have. PretrainingData (what `npbert pretrain --data DIR` reads) returns or raises an npbert
error naming the field or file: never a KeyError, TypeError, EOFError or MemoryError."""
import json
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npbert.data.pretraining_data import PretrainingData
from npbert.data.shards import MANIFEST
from npbert.errors import DataError
from support.fuzzing import fuzz, json_mutated, outcome
from support.shard_corpus import write


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    directory = tmp_path_factory.mktemp("prepared")
    write(directory)
    return directory, json.loads((directory / MANIFEST).read_text())


@pytest.fixture
def copy(prepared, tmp_path):
    shutil.copytree(prepared[0], tmp_path / "data")
    return tmp_path / "data", json.loads(json.dumps(prepared[1]))


def read(directory, manifest):
    (directory / MANIFEST).write_text(json.dumps(manifest))
    return outcome(PretrainingData, directory)


@pytest.mark.parametrize("edit, message", [
    # before: a MemoryError building a 1e9-word embedding table (pretrain --data), and KeyError /
    # TypeError tracebacks for the others
    (lambda m: m.update(vocab_size=1000000000), "manifest.json says vocab_size 1000000000, but "),
    (lambda m: m.update(vocab_size=1e9), "vocab_size must be an integer >= 1, got 1000000000.0"),
    (lambda m: m.pop("vocab_sha256"), "has no vocab_sha256: prepare the data again"),
    (lambda m: m["options"].pop("max_seq_length"), "has no options.max_seq_length"),
    (lambda m: m["options"].update(max_seq_length="32"), 'options.max_seq_length must be an integer >= 1, got "32"'),
    (lambda m: m.update(splits=[1]), "splits must be an object of splits, got [1]"),
    (lambda m: m["splits"]["train"].update(shards=None), "splits.train.shards must be a list of "),
    (lambda m: m["splits"]["train"]["shards"][0].update(file="/etc/passwd"), "splits.train.shards must be a list"),
    (lambda m: m["splits"]["train"]["shards"][0].update(file="../x.npz"), "splits.train.shards must be a list"),
    (lambda m: m.update(complete="yes"), 'complete must be true or false, got "yes"'),
])
def test_a_field_missing_or_of_the_wrong_type_is_named(copy, edit, message):
    directory, manifest = copy
    edit(manifest)
    error = read(directory, manifest)
    assert isinstance(error, DataError) and message in str(error), error


def test_a_shard_of_zero_bytes_is_named(copy):
    # before: EOFError: No data left in file
    directory, manifest = copy
    shard = directory / manifest["splits"]["train"]["shards"][0]["file"]
    shard.write_bytes(b"")
    with pytest.raises(DataError, match=f"shard {shard} is empty \\(0 bytes\\): prepare the data again"):
        PretrainingData(directory)


def test_the_manifest_as_written_reads_back(copy):
    assert len(read(*copy)) > 0


@fuzz
@given(data=st.data())
def test_any_field_replaced_or_left_out(prepared, tmp_path_factory, data):
    directory = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(prepared[0], directory, dirs_exist_ok=True)
    read(directory, data.draw(json_mutated(prepared[1])))
