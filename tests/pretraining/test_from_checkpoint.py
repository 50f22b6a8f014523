"""Pretraining a checkpoint further (--model): its weights, vocabulary and casing, new heads."""
import dataclasses
import json
import os

import numpy as np
import pytest

from npbert.checkpoint import load_pretrained
from npbert.cli import build_parser, main
from npbert.errors import CheckpointError, DataError, NpbertError
from npbert.pretraining.recipe import PretrainOptions, pretrain
from support.pretraining_runs import SMALL, data_dir, options, quiet, train_losses  # noqa: F401  (data_dir: a fixture)


# --- pretraining a checkpoint further (--model) ----------------------------------------------------

@pytest.fixture(scope="module")
def first_run(tmp_path_factory, data_dir):
    """A short pretraining run whose checkpoint the tests below start from."""
    opts = options(tmp_path_factory.mktemp("first"), data_dir, steps=10)
    final = pretrain(opts, log=quiet)
    return os.path.join(opts.out, "checkpoint"), final


@pytest.fixture(scope="module")
def first_run_backend(first_run):
    """The backend first_run ran on: the one in force in Python (numpy, or NPBERT_BACKEND)."""
    from npbert.backend import get_backend
    return get_backend()


def test_model_starts_from_the_checkpoint_weights(tmp_path, data_dir, first_run, first_run_backend, capsys):
    """At learning rate 0 a run from --model keeps the checkpoint's weights to the bit, so its
    held-out scores are the first run's."""
    ckpt, final = first_run
    out = str(tmp_path / "more")
    # the backend that made first_run: bit-exact scores are a promise for one backend only (the
    # CLI's own default is numba; float32 sums differ in the last bits between the two)
    assert main(["pretrain", "--data", data_dir, "--model", ckpt, "--out", out, "--steps", "2", "--batch-size", "8",
                 "--learning-rate", "0", "--log-every", "1", "--eval-batches", "2",
                 "--backend", first_run_backend]) == 0
    assert f"from {ckpt}: its weights\n" in capsys.readouterr().out      # nothing new, nothing dropped
    a, b = load_pretrained(ckpt).params, load_pretrained(os.path.join(out, "checkpoint")).params
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    with open(os.path.join(out, "metrics.jsonl")) as f:
        last = [r for r in map(json.loads, f) if r["kind"] == "eval"][-1]
    assert last["mlm_acc"] == final["mlm_acc"] and last["nsp_loss"] == final["nsp_loss"]


def test_model_resumes_bit_exactly(tmp_path, data_dir, first_run):
    ckpt, _ = first_run
    kw = dict(model=ckpt, model_overrides=None, steps=12)
    pretrain(options(tmp_path / "a", data_dir, **kw), log=quiet)
    assert pretrain(options(tmp_path / "b", data_dir, stop_after=5, **kw), log=quiet)["stopped"]
    pretrain(options(tmp_path / "b", data_dir, **kw), resume=True, log=quiet)
    assert train_losses(str(tmp_path / "a" / "run")) == train_losses(str(tmp_path / "b" / "run"))


def test_model_without_pretraining_heads_gets_new_ones(tmp_path, data_dir, first_run):
    """A Hugging Face BertModel (or a fine-tuned checkpoint): the encoder is kept, the MLM and NSP
    heads start random, a task head is left out, and the run saves a pretraining config."""
    from npbert.checkpoint import save_pretrained
    from npbert.heads.params import finetuned_config
    from npbert.heads.registry import HEADS
    ckpt, _ = first_run
    loaded = load_pretrained(ckpt)
    encoder = {k: v for k, v in loaded.params.items() if k.startswith("bert.")}
    head = {"classifier.weight": np.zeros((2, SMALL["hidden_size"]), np.float32),
            "classifier.bias": np.zeros(2, np.float32)}
    save_pretrained(str(tmp_path / "ft"), finetuned_config(loaded.config, HEADS["sequence_classification"], ["a", "b"]),
                    {**encoder, **head}, loaded.tokenizer)
    said = []
    pretrain(options(tmp_path, data_dir, model=str(tmp_path / "ft"), model_overrides=None, steps=2,
                     learning_rate=0.0), log=said.append)
    line = next(s for s in said if s.startswith("from "))
    assert "new (random): cls.predictions.bias" in line and "cls.seq_relationship.weight" in line
    assert line.split("; not used: ")[1] in ("classifier.bias, classifier.weight", "classifier.weight, classifier.bias")
    assert "bert." not in line
    run = load_pretrained(os.path.join(tmp_path, "run", "checkpoint"))
    assert all(np.array_equal(run.params[k], v) for k, v in encoder.items())
    assert run.config.extra["architectures"] == ["BertForPreTraining"] and "id2label" not in run.config.extra


def test_model_that_does_not_fit_the_data_is_refused(tmp_path, data_dir, first_run):
    from npbert.checkpoint import save_pretrained
    from npbert.errors import DataError
    ckpt, _ = first_run
    loaded = load_pretrained(ckpt)
    tokens = list(loaded.tokenizer.vocab)
    tokens[-1], tokens[-2] = tokens[-2], tokens[-1]                 # same size, two ids swapped
    save_pretrained(str(tmp_path / "swapped"), loaded.config, loaded.params, tokens)
    with pytest.raises(DataError, match="prepared with a different vocabulary"):
        pretrain(options(tmp_path / "a", data_dir, model=str(tmp_path / "swapped"), model_overrides=None), log=quiet)
    from npbert.model_params import init_params
    short = dataclasses.replace(loaded.config, max_position_embeddings=16)
    save_pretrained(str(tmp_path / "short"), short, init_params(short, np.random.default_rng(0)), loaded.tokenizer)
    with pytest.raises(DataError, match="up to 32 tokens, more than .* max_position_embeddings 16"):
        pretrain(options(tmp_path / "b", data_dir, model=str(tmp_path / "short"), model_overrides=None), log=quiet)
    loaded.tokenizer.basic.do_lower_case = False                   # a cased model on lower-cased data
    save_pretrained(str(tmp_path / "cased"), loaded.config, loaded.params, loaded.tokenizer)
    with pytest.raises(DataError, match="prepared lower-cased, but .*tokenizer is cased; .* --cased"):
        pretrain(options(tmp_path / "d", data_dir, model=str(tmp_path / "cased"), model_overrides=None), log=quiet)
    with pytest.raises(NpbertError, match="model_overrides cannot change it"):
        pretrain(options(tmp_path / "c", data_dir, model=ckpt), log=quiet)
    os.remove(os.path.join(tmp_path, "short", "vocab.txt"))
    with pytest.raises(CheckpointError, match="has no vocab.txt, so there is no telling"):
        pretrain(options(tmp_path / "e", data_dir, model=str(tmp_path / "short"), model_overrides=None), log=quiet)


def test_model_prepares_a_corpus_with_its_own_vocabulary_and_casing(tmp_path, first_run):
    """--corpus without --vocab: the checkpoint's vocab.txt, not a newly trained one its weights
    would not fit; and its casing, so a cased checkpoint is not refused its own corpus."""
    from npbert.checkpoint import save_pretrained
    from npbert.data.pretraining_data import PretrainingData
    from npbert.tokenizer import load_vocab
    ckpt, _ = first_run
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"the doctor went to the city number {i} .\nshe read a book there .\n\n"
                              for i in range(40)), encoding="utf-8")
    loaded = load_pretrained(ckpt)
    loaded.tokenizer.basic.do_lower_case = False
    save_pretrained(str(tmp_path / "cased"), loaded.config, loaded.params, loaded.tokenizer)
    for model, lower in ((ckpt, True), (str(tmp_path / "cased"), False)):
        out = tmp_path / f"run-{lower}"
        pretrain(PretrainOptions(out=str(out), corpus=str(corpus), model=model, max_seq_length=32, steps=2,
                                 batch_size=4, eval_batches=1), log=quiet)
        assert load_vocab(out / "data" / "vocab.txt") == load_vocab(os.path.join(ckpt, "vocab.txt"))
        assert PretrainingData(str(out / "data")).do_lower_case is lower
        assert load_pretrained(str(out / "checkpoint")).tokenizer.do_lower_case is lower
    args = build_parser().parse_args(["pretrain", "--cased"])
    assert args.do_lower_case is False and build_parser().parse_args(["pretrain"]).do_lower_case is None
