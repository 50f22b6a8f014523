"""The pretraining loop: bit-exact resume, atomic checkpoints, clear stops on NaN and Ctrl-C."""
import json
import os
import signal

import numpy as np
import pytest

from npbert import safetensors
from npbert.checkpoint import load_pretrained
from npbert.cli import main
from npbert.data.prepare import PrepareOptions, prepare
from npbert.errors import NpbertError
from npbert.pretrain import PretrainOptions, pretrain
from npbert.train import TrainingDiverged

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


def quiet(*args, **kwargs):
    pass


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
def test_resume_is_bit_exact(tmp_path, data_dir, backend_name, monkeypatch):
    """Also across thread counts for numba (3 threads for the whole run, 1 for the stopped and
    resumed one): its kernels split work so that no sum depends on how many threads ran it."""
    from npbert.backend import set_backend
    set_backend(backend_name)
    full = options(tmp_path / "a", data_dir)
    monkeypatch.setenv("NPBERT_NUM_THREADS", "3")
    pretrain(full, log=quiet)
    monkeypatch.setenv("NPBERT_NUM_THREADS", "1")
    from npbert.data.pretraining_data import PretrainingData
    assert full.steps * full.batch_size > len(PretrainingData(data_dir)), "the run must cross an epoch boundary"
    stopped = options(tmp_path / "b", data_dir, stop_after=11)
    r = pretrain(stopped, log=quiet)
    assert r["stopped"] and r["step"] == 11
    r = pretrain(options(tmp_path / "b", data_dir, stop_after=23), resume=True, log=quiet)  # a second stop
    assert r["stopped"] and r["step"] == 23
    pretrain(options(tmp_path / "b", data_dir), resume=True, log=quiet)
    assert train_losses(full.out) == train_losses(stopped.out)          # every step's loss, to the bit
    a = load_pretrained(os.path.join(full.out, "checkpoint")).params
    b = load_pretrained(os.path.join(stopped.out, "checkpoint")).params
    assert all(np.array_equal(a[k], b[k]) for k in a)
    for name in ("training_state.npz",):
        za, zb = np.load(os.path.join(full.out, "checkpoint", name)), np.load(os.path.join(stopped.out, "checkpoint", name))
        assert all(np.array_equal(za[k], zb[k]) for k in za.files)


def test_loss_goes_down_and_metrics_are_logged(tmp_path, data_dir):
    r = pretrain(options(tmp_path, data_dir, steps=60, eval_every=30), log=quiet)
    losses = [loss for _, loss in train_losses(r["checkpoint"].rsplit("/", 1)[0])]
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.5
    records = [json.loads(line) for line in open(tmp_path / "run" / "metrics.jsonl")]
    assert {"train", "eval"} <= {rec["kind"] for rec in records}
    assert {"loss", "mlm_acc", "nsp_acc", "lr", "tokens_per_s"} <= set(records[0])
    assert 0 <= r["mlm_acc"] <= 1 and 0 <= r["baseline_mlm_acc"] <= 1


def test_existing_output_directory_is_refused_unless_resume_or_overwrite(tmp_path, data_dir):
    pretrain(options(tmp_path, data_dir, steps=2), log=quiet)
    with pytest.raises(NpbertError, match="already exists.*--resume.*--overwrite"):
        pretrain(options(tmp_path, data_dir, steps=2), log=quiet)
    pretrain(options(tmp_path, data_dir, steps=2), overwrite=True, log=quiet)
    with pytest.raises(NpbertError, match="nothing to resume"):
        pretrain(options(tmp_path / "never", data_dir), resume=True, log=quiet)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, data_dir, monkeypatch):
    import npbert.pretrain as pretrain_module
    real = pretrain_module.pretraining_forward
    calls = {"n": 0}

    def poisoned(*args, **kwargs):
        out, cache = real(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 10:                            # the 10th training step
            out["loss"] = np.float32("nan")
        return out, cache
    monkeypatch.setattr(pretrain_module, "pretraining_forward", poisoned)
    with pytest.raises(TrainingDiverged, match="nan at step 10"):
        pretrain(options(tmp_path, data_dir, eval_every=100), log=quiet)
    state = json.load(open(tmp_path / "run" / "checkpoint" / "training_state.json"))
    assert state["position"]["step"] == 7                # the save before the NaN, intact
    load_pretrained(str(tmp_path / "run" / "checkpoint"))


def test_crash_while_saving_keeps_the_previous_checkpoint(tmp_path, data_dir, monkeypatch):
    real = safetensors.save_file
    saves = {"n": 0}

    def crash_on_second_save(tensors, path, metadata=None):
        saves["n"] += 1
        if saves["n"] == 2:
            with open(path, "wb") as f:
                f.write(b"half a file")
            raise OSError("disk full (simulated)")
        return real(tensors, path, metadata)
    monkeypatch.setattr(safetensors, "save_file", crash_on_second_save)
    with pytest.raises(OSError, match="simulated"):
        pretrain(options(tmp_path, data_dir), log=quiet)
    state = json.load(open(tmp_path / "run" / "checkpoint" / "training_state.json"))
    assert state["position"]["step"] == 7
    monkeypatch.setattr(safetensors, "save_file", real)
    r = pretrain(options(tmp_path, data_dir, steps=40), resume=True, log=quiet)   # and it resumes from there
    assert r["step"] == 40


def test_ctrl_c_saves_a_resumable_checkpoint(tmp_path, data_dir):
    def interrupt_at_step_4(line, *a, **k):
        if line.startswith("step     4/"):
            os.kill(os.getpid(), signal.SIGINT)          # what Ctrl-C sends
    r = pretrain(options(tmp_path, data_dir), log=interrupt_at_step_4)
    assert r["stopped"] and r["step"] == 4
    r = pretrain(options(tmp_path, data_dir), resume=True, log=quiet)
    assert not r["stopped"] and r["step"] == 40


def test_cli_pretrain_then_fill_mask(tmp_path, data_dir, capsys):
    out = str(tmp_path / "cli")
    assert main(["pretrain", "--data", data_dir, "--out", out, "--steps", "3", "--batch-size", "4",
                 "--log-every", "1", "--eval-batches", "1"]) == 0
    text = capsys.readouterr().out
    assert "step     3/3" in text and "held-out MLM accuracy" in text and "model saved to" in text
    assert main(["pretrain", "--data", data_dir, "--out", out, "--steps", "3"]) == 2   # exists: refused
    assert "already exists" in capsys.readouterr().err
    assert main(["fill-mask", os.path.join(out, "checkpoint"), "the [MASK] is here .", "--top-k", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("  [MASK] 1:") and len(lines[1].split()) == 2 + 2 * 3


def test_training_commands_default_to_the_numba_backend_unless_npbert_backend_says(monkeypatch):
    from npbert.cli import build_parser
    monkeypatch.delenv("NPBERT_BACKEND", raising=False)
    for argv in (["pretrain"], ["finetune", "--task", "builtin-sentence"]):
        assert build_parser().parse_args(argv).backend == "numba"
        assert build_parser().parse_args(argv + ["--backend", "numpy"]).backend == "numpy"
    monkeypatch.setenv("NPBERT_BACKEND", "numpy")
    assert build_parser().parse_args(["pretrain"]).backend == "numpy"
