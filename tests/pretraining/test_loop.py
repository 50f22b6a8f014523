"""The pretraining loop: bit-exact resume, clear stops on NaN and Ctrl-C, what each step does,
held-out evaluation and its baselines."""
import errno
import json
import os
import signal

import numpy as np
import pytest

from npbert import safetensors
from npbert.checkpoint import load_pretrained
from npbert.cli import build_parser, main
from npbert.data.prepare import PrepareOptions, prepare
from npbert.errors import DataError, NpbertError
from npbert.pretraining.recipe import pretrain
from npbert.training.loop import TrainingDiverged
from support.optimizer_spy import spy_on_updates
from support.pretraining_runs import (SMALL, baselines, data_dir, options, quiet, records, train_losses)  # noqa: F401 (a fixture)


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
def test_resume_is_bit_exact(tmp_path, data_dir, backend_name, monkeypatch):
    """numba on 2 threads: its matmuls are split over the threads (docs/determinism.md: the same
    thread count, the same bits)."""
    from npbert.backend import set_backend
    set_backend(backend_name)
    full = options(tmp_path / "a", data_dir)
    monkeypatch.setenv("NPBERT_NUM_THREADS", "2")
    pretrain(full, log=quiet)
    from npbert.data.pretraining_data import PretrainingData
    assert full.steps * full.batch_size > len(PretrainingData(data_dir)), "the run must cross an epoch boundary"
    stopped = options(tmp_path / "b", data_dir, stop_after=11)
    r = pretrain(stopped, log=quiet)
    assert r["stopped"] and r["step"] == 11
    r = pretrain(options(tmp_path / "b", data_dir, stop_after=23), resume=True, log=quiet)  # a second stop
    assert r["stopped"] and r["step"] == 23
    pretrain(options(tmp_path / "b", data_dir), resume=True, log=quiet)
    assert train_losses(full.out) == train_losses(stopped.out)          # every step's loss, to the bit
    assert baselines(full.out) == baselines(stopped.out) and len(baselines(full.out)) == 1   # not one per resume
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
    assert {"loss", "mlm_acc", "nsp_acc", "lr", "tokens_per_s"} <= set(records[1])
    assert 0 <= r["mlm_acc"] <= 1 and 0 <= r["baseline_mlm_acc"] <= 1
    # the baselines the run ends with are the log's first record, for `npbert plot`
    assert records[0] == dict(kind="baseline", step=0, mlm_acc=r["baseline_mlm_acc"], nsp_acc=r["baseline_nsp_acc"])


def test_existing_output_directory_is_refused_unless_resume_or_overwrite(tmp_path, data_dir):
    pretrain(options(tmp_path, data_dir, steps=2), log=quiet)
    with pytest.raises(NpbertError, match="already exists.*--resume.*--overwrite"):
        pretrain(options(tmp_path, data_dir, steps=2), log=quiet)
    pretrain(options(tmp_path, data_dir, steps=2), overwrite=True, log=quiet)
    with pytest.raises(NpbertError, match="nothing to resume"):
        pretrain(options(tmp_path / "never", data_dir), resume=True, log=quiet)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, data_dir, monkeypatch):
    import npbert.pretraining.job as pretrain_module
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
            raise OSError(errno.ENOSPC, "No space left on device (simulated)", path)
        return real(tensors, path, metadata)
    monkeypatch.setattr(safetensors, "save_file", crash_on_second_save)
    with pytest.raises(NpbertError, match=r"model.safetensors: No space left on device \(simulated\); the last "
                                          r"good checkpoint, step 7 in .*checkpoint, is kept"):
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


def test_data_longer_than_the_model_positions_is_refused_before_the_first_step(tmp_path, data_dir):
    from npbert.errors import DataError
    said = []
    with pytest.raises(DataError, match="up to 32 tokens, more than the tiny preset's max_position_embeddings 16"):
        pretrain(options(tmp_path, data_dir, model_overrides={**SMALL, "max_position_embeddings": 16}), log=said.append)
    assert not any(s.startswith("step") for s in said)


def test_checkpoint_keeps_the_casing_of_its_data(tmp_path):
    """A run on cased data saves a cased tokenizer (tokenizer_config.json), so the checkpoint
    tokenizes new text as its training data was; it used to load as lower-cased."""
    corpus = tmp_path / "cased.txt"
    corpus.write_text("".join(f"The Doctor went to Paris, number {i} .\nShe read a Book there .\n\n"
                              for i in range(40)), encoding="utf-8")
    data = str(tmp_path / "data")
    prepare(PrepareOptions(corpus=str(corpus), out=data, vocab_size=120, max_seq_length=32, do_lower_case=False),
            log=quiet)
    pretrain(options(tmp_path, data, steps=2, save_every=1), log=quiet)
    tokenizer = load_pretrained(str(tmp_path / "run" / "checkpoint")).tokenizer
    assert tokenizer.do_lower_case is False and "Paris" in tokenizer.tokenize("The Doctor went to Paris")


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



# --- what the loop does each step ----------------------------------------------------------------

def test_every_step_uses_the_schedule_and_clipped_gradients(tmp_path, data_dir, monkeypatch):
    """The learning rate of step i is warmup then linear decay, written out here on its own (not
    npbert's function), and the optimizer sees gradients clipped to --max-grad-norm: a loop that
    skipped clipping or used a constant rate would pass the loss-goes-down tests."""
    seen = spy_on_updates(monkeypatch)
    steps, warmup, peak, max_norm = 12, 4, 2e-3, 0.05
    pretrain(options(tmp_path, data_dir, steps=steps, warmup_steps=warmup, learning_rate=peak, max_grad_norm=max_norm),
             log=quiet)
    expected = [peak * i / warmup if i < warmup else peak * (steps - i) / (steps - warmup) for i in range(steps)]
    assert [lr for lr, _ in seen] == pytest.approx(expected, rel=1e-12, abs=0)
    norms = [norm for _, norm in seen]
    assert all(abs(n - max_norm) < 1e-5 * max_norm for n in norms), norms   # every raw norm is > 0.05 here
    logged = [r for r in map(json.loads, open(tmp_path / "run" / "metrics.jsonl")) if r["kind"] == "train"]
    assert [r["lr"] for r in logged] == pytest.approx(expected, rel=1e-12, abs=0)
    assert all(r["grad_norm"] > max_norm for r in logged)                  # logged: the norm before clipping


def test_a_non_finite_gradient_stops_before_the_update(tmp_path, data_dir, monkeypatch):
    import npbert.pretraining.job as pretrain_module
    real = pretrain_module.pretraining_backward

    def poisoned(cache):
        grads = real(cache)
        grads["bert.pooler.dense.bias"][0] = np.inf
        return grads
    monkeypatch.setattr(pretrain_module, "pretraining_backward", poisoned)
    seen = spy_on_updates(monkeypatch)
    with pytest.raises(TrainingDiverged, match="gradient norm is (inf|nan) at step 1"):
        pretrain(options(tmp_path, data_dir), log=quiet)
    assert seen == []


def test_nsp_is_reported_against_the_majority_class_of_the_heldout_labels(tmp_path, data_dir):
    from npbert.data.pretraining_data import PretrainingData
    said = []
    r = pretrain(options(tmp_path, data_dir, steps=2), log=said.append)
    labels = PretrainingData(data_dir, "heldout").arrays["next_sentence_labels"]
    notnext = labels.mean()
    assert r["baseline_nsp_acc"] == pytest.approx(max(notnext, 1 - notnext))
    line = next(s for s in said if s.startswith("held-out NSP accuracy"))
    assert f"majority-class baseline {max(notnext, 1 - notnext):.3f}" in line and "chance" not in line


def test_rising_heldout_loss_is_warned_about_once(tmp_path, data_dir, monkeypatch):
    import npbert.pretraining.job as pretrain_module
    real, losses = pretrain_module.evaluate, iter([4.1, 3.9, 4.3, 5.0, 6.2, 7.7, 9.1, 9.5, 9.9])

    def rising(*args, **kwargs):
        return dict(real(*args, **kwargs), mlm_loss=next(losses))
    monkeypatch.setattr(pretrain_module, "evaluate", rising)
    said = []
    pretrain(options(tmp_path, data_dir, steps=16, eval_every=2), log=said.append)
    warnings = [s for s in said if "warning" in s]
    assert len(warnings) == 1 and "risen at 3 evaluations in a row (lowest 3.900 at step 4, now 6.200)" in warnings[0]
    assert said.index(warnings[0]) > said.index(next(s for s in said if s.startswith("step    10/")))
