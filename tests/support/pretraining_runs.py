"""What the pretraining test modules share: a small prepared corpus, a small model's options, and
readers of a run's metrics and checkpoint (tests/pretraining/, split by concern)."""
import dataclasses
import json
import os
import signal

import numpy as np
import pytest

from npbert import safetensors
from npbert.checkpoint import load_pretrained
from npbert.cli import build_parser, main
from npbert.data.prepare import PrepareOptions, prepare
from npbert.errors import CheckpointError, DataError, NpbertError
from npbert.pretraining.recipe import PretrainOptions, pretrain  # noqa: F401
from npbert.training.loop import TrainingDiverged

SMALL = dict(num_hidden_layers=1, hidden_size=16, num_attention_heads=2, intermediate_size=32,
             max_position_embeddings=64)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A small prepared builtin corpus: ~16 batches of 8 per epoch, so runs cross epochs."""
    out = str(tmp_path_factory.mktemp("data") / "builtin")
    prepare(PrepareOptions(corpus="builtin", out=out, max_documents=24, dupe_factor=1, max_seq_length=32, seed=3),
            log=lambda *a, **k: None)
    return out


def options(tmp_path, data_dir, **kw):
    base = dict(out=str(tmp_path / "run"), data=data_dir, preset="tiny", model_overrides=SMALL, steps=40,
                batch_size=8, learning_rate=3e-3, log_every=1, eval_every=20, eval_batches=2, save_every=7, seed=5)
    base.update(kw)
    return PretrainOptions(**base)


def train_losses(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [(r["step"], r["loss"]) for r in map(json.loads, f) if r["kind"] == "train"]


def baselines(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["kind"] == "baseline"]


def quiet(*args, **kwargs):
    pass




def saved_step(out):
    with open(os.path.join(out, "checkpoint", "training_state.json")) as f:
        return json.load(f)["position"]["step"]


def records(out, kind):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["kind"] == kind]


def saved_options(out):
    with open(os.path.join(out, "checkpoint", "training_state.json")) as f:
        return json.load(f)["options"]
