"""A checkpoint's config.json as a user or another tool may leave it: any JSON value, or npbert's
own with fields replaced by any JSON value or left out. Every reader of it (the checks before
any weight is read, `npbert info`'s head listing, the head's dropout and labels) returns or
raises an npbert error naming the field: never a TypeError, never a hang."""
import json
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

import npbert.checkpoint
from npbert.checkpoint import check_checkpoint
from npbert.commands.info import heads
from npbert.config import HEAD_FIELD_TYPES
from npbert.errors import CheckpointError
from npbert.heads.feature_based import FIELD
from npbert.heads.head import classifier_dropout
from npbert.heads.params import HEAD_FIELDS, label_names_of
from npbert.tasks.checkpoint_fit import check_head_fits_task
from npbert.tasks.registry import TASKS
from support.random_models import random_finetuned
from support.fuzzing import JSON, fuzz, json_mutated, outcome


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = random_finetuned(tmp_path_factory.mktemp("model") / "m", "sequence_classification",
                                 TASKS["builtin-sentence"].labels)
    return directory, json.loads(open(f"{directory}/config.json").read())


def read_everything(directory):
    config, shapes = check_checkpoint(directory)
    check_head_fits_task(config, TASKS["builtin-sentence"], directory)
    return heads(config, shapes), label_names_of(config), classifier_dropout(config)


def check_config(work, config):
    shutil.copytree(work[0], work[2], dirs_exist_ok=True)
    with open(f"{work[2]}/config.json", "w") as f:
        json.dump(config, f)
    return outcome(read_everything, work[2])


@pytest.fixture(scope="module")
def work(model, tmp_path_factory):
    return (*model, str(tmp_path_factory.mktemp("work") / "m"))


@pytest.mark.parametrize("field, value, message", [
    (None, [1, 2], "a config must be a JSON object {...}, not list"),
    ("id2label", [1], 'id2label must be an object {"0": label, "1": label, ...} of strings, got [1]'),
    ("id2label", {"0": 5}, "id2label must be an object"),
    ("id2label", {"1": "a"}, "id2label must be an object"),
    ("architectures", "BertForMaskedLM", 'architectures must be a list of class names, got "BertForMaskedLM"'),
    ("architectures", [1], "architectures must be a list of class names, got [1]"),
    ("classifier_dropout", "x", 'classifier_dropout must be null or a number in [0, 1), got "x"'),
    ("npbert_features", 3, "npbert_features must be a string, got 3"),
    ("hidden_dropout_prob", "x", "BertConfig.hidden_dropout_prob must be a number in [0, 1), got 'x'"),
    ("layer_norm_eps", None, "BertConfig.layer_norm_eps must be a finite number > 0, got None"),
    # before: info, fill-mask, predict and evaluate listed 1.6e9 missing tensors (past 40 s)
    ("num_hidden_layers", 100000000, "config.json says num_hidden_layers 100000000 but the weights have 1 layers"),
])
def test_a_field_of_the_wrong_type_is_named(work, monkeypatch, field, value, message):
    # before: an AttributeError or TypeError traceback (or "B/e/r/t/F/o/r/..." for a string architectures)
    shapes_of = npbert.checkpoint.param_shapes
    monkeypatch.setattr(npbert.checkpoint, "param_shapes", lambda config, **kw: shapes_of(config, **kw)
                        if config.num_hidden_layers < 1000 else pytest.fail("a shape per tensor of 1e8 layers"))
    config = value if field is None else dict(work[1], **{field: value})
    error = check_config(work, config)
    assert isinstance(error, CheckpointError) and message in str(error)


def test_the_file_as_written_reads_back(work):
    assert not isinstance(check_config(work, work[1]), Exception)
    assert FIELD in HEAD_FIELD_TYPES and set(HEAD_FIELD_TYPES) <= set(HEAD_FIELDS) | {"classifier_dropout"}


@fuzz
@given(config=JSON)
def test_any_json_value(work, config):
    check_config(work, config)


@fuzz
@given(data=st.data())
def test_any_field_replaced_or_left_out(work, data):
    check_config(work, data.draw(json_mutated(work[1])))
