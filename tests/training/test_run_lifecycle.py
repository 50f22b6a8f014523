"""The run lifecycle pretraining and fine-tuning share (npbert/training/run.py): one writer per
run directory, a run is what carries npbert's marker, every option checked before anything is
touched, resume on the same data, no non-finite model saved, and every failure one line that
says which checkpoint is kept."""
import errno
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from npbert.cli import main
from npbert.data.prepare import PrepareOptions, prepare
from npbert.errors import NpbertError
from npbert.finetuning.recipe import FinetuneOptions, finetune
from npbert.lock import lock_path, run_lock
from npbert.training.loop import TrainingDiverged
from support.patience import HANG_SECONDS
from support.pretraining_runs import data_dir, options, pretrain, quiet, records, saved_step  # noqa: F401  (a fixture)


@pytest.fixture
def trained(tmp_path, data_dir):
    """A run that saved, at step 7."""
    pretrain(options(tmp_path, data_dir, steps=7), log=quiet)
    return str(tmp_path / "run")


def cli(tmp_path, data_dir, *extra, out=None):
    return main(["pretrain", "--data", data_dir, "--out", str(out or tmp_path / "run"), "--steps", "3",
                 "--batch-size", "4", "--eval-batches", "1", "--log-every", "1", *extra])


# --- a run is a directory with npbert's marker, and one writer at a time ----------------------------

def test_a_directory_with_a_metrics_log_and_a_checkpoint_dir_is_not_a_run(tmp_path, data_dir, capsys):
    e = tmp_path / "run"
    (e / "checkpoint").mkdir(parents=True)
    (e / "metrics.jsonl").write_text('{"acc": 1}\n')
    (e / "NOTES.txt").write_text("notes")
    for extra in ([], ["--overwrite"]):
        assert cli(tmp_path, data_dir, *extra) == 2
        assert "is not an npbert run (it has no npbert_run.json)" in capsys.readouterr().err
    assert sorted(os.listdir(e)) == ["NOTES.txt", "checkpoint", "metrics.jsonl"]
    assert (e / "metrics.jsonl").read_text() == '{"acc": 1}\n'


def test_a_second_writer_is_refused_in_one_line_naming_the_first(tmp_path, data_dir, trained, capsys):
    with run_lock(trained):
        for extra in (["--resume"], ["--overwrite"]):
            assert cli(tmp_path, data_dir, *extra) == 2
            assert capsys.readouterr().err == (f"npbert pretrain: error: {trained} is in use by another npbert process "
                                               f"(PID {os.getpid()}): one directory takes one writer at a time; "
                                               "wait for it to finish, or choose another --out\n")
    assert saved_step(trained) == 7 and not os.path.exists(lock_path(trained))


def test_a_lock_left_by_a_process_killed_with_sigkill_is_taken_over(tmp_path, data_dir):
    pretrain(options(tmp_path, data_dir, steps=9, stop_after=3), log=quiet)
    trained = str(tmp_path / "run")
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from npbert.lock import run_lock\n"
                               f"with run_lock({trained!r}):\n print('held', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,  # held until killed
                              env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert holder.stdout.readline() == "held\n"
    with pytest.raises(NpbertError, match=f"in use by another npbert process \\(PID {holder.pid}\\)"):
        pretrain(options(tmp_path, data_dir, steps=9), resume=True, log=quiet)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert os.path.exists(lock_path(trained))            # the file stays; the kernel released its lock
    assert pretrain(options(tmp_path, data_dir, steps=9), resume=True, log=quiet)["step"] == 9


# --- every option checked before anything is touched -------------------------------------------------

@pytest.mark.parametrize("flag,value", [("--learning-rate", "inf"), ("--learning-rate", "1e39"),
                                        ("--learning-rate", "3e3"), ("--weight-decay", "inf"),
                                        ("--max-grad-norm", "inf"), ("--learning-rate", "nan")])
def test_absurd_optimizer_values_are_refused_and_overwrite_keeps_the_run(tmp_path, data_dir, trained, capsys, flag,
                                                                         value):
    before = sorted(os.listdir(trained))
    with pytest.raises(SystemExit) as refused:                        # refused while parsing the command line
        cli(tmp_path, data_dir, "--overwrite", flag, value)
    assert refused.value.code == 2
    assert capsys.readouterr().err.startswith(f"npbert pretrain: error: argument {flag}: must be a number in [0, ")
    assert sorted(os.listdir(trained)) == before and saved_step(trained) == 7
    assert [e for e in os.listdir(tmp_path) if e.startswith(".")] == []


@pytest.mark.parametrize("change", [dict(learning_rate=float("inf")), dict(learning_rate=3e3),
                                    dict(weight_decay=float("nan")), dict(max_grad_norm=float("inf")), dict(seed=-1)])
def test_the_python_api_checks_the_same_numbers_before_anything_is_touched(tmp_path, data_dir, trained, change):
    # the command line refuses these while parsing; a script calling pretrain() meets the same check
    before = sorted(os.listdir(trained))
    with pytest.raises(NpbertError, match="must be"):
        pretrain(options(tmp_path, data_dir, **change), overwrite=True, log=quiet)
    assert sorted(os.listdir(trained)) == before and saved_step(trained) == 7


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")   # the diverging steps, on purpose
def test_a_non_finite_model_is_never_saved_and_the_message_says_what_is_kept(tmp_path, data_dir, monkeypatch):
    import npbert.training.loop as loop
    real = loop.update

    def blow_up_at_step_5(job, ckpt, schedule, batch):
        out = real(job, ckpt, schedule, batch)
        if ckpt.optimizer.t == 5:
            next(iter(ckpt.params.values()))[0] = np.inf  # an update that overflowed, from a finite loss and norm
        return out
    monkeypatch.setattr(loop, "update", blow_up_at_step_5)
    with pytest.raises(TrainingDiverged, match=r"after step 5 the parameter .* is not finite .* this model is not "
                                               r"saved; no checkpoint of this run had been saved yet"):
        pretrain(options(tmp_path, data_dir, steps=5, save_every=5), log=quiet)
    assert not (tmp_path / "run" / "checkpoint").exists()
    with pytest.raises(TrainingDiverged, match=r"after step 5 .*; the last good checkpoint, step 4 in .*, is kept"):
        pretrain(options(tmp_path, data_dir, steps=5, save_every=4), log=quiet)
    assert saved_step(tmp_path / "run") == 4


def test_a_diverged_overwrite_puts_the_earlier_run_back_and_says_so(tmp_path, data_dir, trained, monkeypatch):
    import npbert.pretraining.job as job
    monkeypatch.setattr(job, "pretraining_forward", lambda *a, **k: ({"loss": np.float32("nan")}, None))
    with pytest.raises(TrainingDiverged, match="this run saved nothing, and the earlier run in .* is put back"):
        pretrain(options(tmp_path, data_dir, steps=3), overwrite=True, log=quiet)
    assert saved_step(trained) == 7


# --- write errors: one line, exit 2, the previous checkpoint survives ------------------------------

@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_a_failed_metrics_write_is_one_line_and_keeps_the_checkpoint(tmp_path, data_dir, monkeypatch, capsys, code):
    from npbert.training.metrics_log import MetricsLog
    real = MetricsLog.write

    def write(self, **record):
        if record.get("step") == 5:
            raise OSError(code, os.strerror(code), self.path)
        real(self, **record)
    monkeypatch.setattr(MetricsLog, "write", write)
    assert cli(tmp_path, data_dir, "--steps", "6", "--save-every", "2") == 2
    err = capsys.readouterr().err
    assert err == (f"npbert pretrain: error: {tmp_path / 'run' / 'metrics.jsonl'}: {os.strerror(code)}; the last good "
                   f"checkpoint, step 4 in {tmp_path / 'run' / 'checkpoint'}, is kept\n")
    assert saved_step(tmp_path / "run") == 4


def test_a_failed_prepare_write_is_one_line(tmp_path, monkeypatch, capsys):
    import npbert.data.prepare as prepare_module

    def full(path, arrays):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
    monkeypatch.setattr(prepare_module, "write_shard", full)
    assert main(["prepare", "--out", str(tmp_path / "d"), "--max-documents", "30"]) == 2
    assert capsys.readouterr().err.startswith(f"npbert prepare: error: could not write {tmp_path / 'd'}")


# --- paths that are not what they seem ----------------------------------------------------------------

def test_out_a_symlink_with_overwrite_is_refused_before_training(tmp_path, data_dir, trained, capsys):
    os.symlink(trained, tmp_path / "link")
    assert cli(tmp_path, data_dir, "--overwrite", out=tmp_path / "link") == 2
    assert "is a symbolic link" in capsys.readouterr().err and saved_step(trained) == 7


def test_checkpoint_a_symlink_or_a_file_is_refused_before_training(tmp_path, data_dir, trained, capsys):
    ckpt = os.path.join(trained, "checkpoint")
    os.rename(ckpt, tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", ckpt)
    assert cli(tmp_path, data_dir, "--resume") == 2
    assert "checkpoint is a symbolic link" in capsys.readouterr().err
    os.remove(ckpt)
    open(ckpt, "w").close()
    said = []
    with pytest.raises(NpbertError, match="is a file, not a checkpoint directory"):
        pretrain(options(tmp_path, data_dir, steps=3), log=said.append)
    assert not any(line.startswith("step") for line in said)           # refused before training, not at a save


def test_out_dot_with_overwrite_is_refused(tmp_path, data_dir, trained, monkeypatch, capsys):
    monkeypatch.chdir(trained)
    assert cli(tmp_path, data_dir, "--overwrite", out=".") == 2
    assert "it is (or holds) the current directory" in capsys.readouterr().err and saved_step(trained) == 7


def test_a_reader_says_where_an_interrupted_overwrite_left_the_run(tmp_path, trained):
    from npbert.checkpoint import load_pretrained
    aside = tmp_path / f".run.replaced-{2 ** 22 + 5}-0123abcd"
    os.rename(trained, aside)
    with pytest.raises(NpbertError, match=f"an interrupted --overwrite left the earlier run of {trained} at {aside}"):
        load_pretrained(os.path.join(trained, "checkpoint"))


def test_a_kill_before_the_new_runs_marker_is_undone_by_the_next_command(tmp_path, data_dir, trained):
    aside = tmp_path / f".run.replaced-{2 ** 22 + 6}-0123abcd"
    os.rename(trained, aside)
    os.mkdir(trained)                                    # the new run's directory, killed before its marker
    assert pretrain(options(tmp_path, data_dir, steps=7), resume=True, log=quiet)["step"] == 7
    assert saved_step(trained) == 7 and not aside.exists()


# --- tampered run files -------------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["[1, 2]", '{"kind": "train", "step": null}', '"text"'])
def test_a_tampered_metrics_log_is_one_line(tmp_path, data_dir, trained, line):
    with open(os.path.join(trained, "metrics.jsonl"), "a") as f:
        f.write(line + "\n")
    with pytest.raises(NpbertError, match="metrics.jsonl line 11 is not a metrics record"):
        pretrain(options(tmp_path, data_dir, steps=7), resume=True, log=quiet)


@pytest.mark.parametrize("change", [dict(optimizer_t=-1), dict(position={"step": None, "epoch": 0, "batch": 0}),
                                    dict(position=[1, 2]),
                                    # before: an AttributeError on --resume, a ValueError once training had started
                                    dict(extra=[]), dict(extra={"heldout_losses": "x"}),
                                    dict(extra={"heldout_losses": [[4, "low"]]}),
                                    dict(extra={"means": {"sums": {"loss": "x"}, "n": 1}}),
                                    dict(extra={"means": {"total": 1}}), dict(extra={"inputs": ["a"]}),
                                    dict(extra={"best": {"accuracy": 0.5}})])
def test_a_tampered_training_state_is_one_line(tmp_path, data_dir, trained, change):
    path = os.path.join(trained, "checkpoint", "training_state.json")
    state = json.load(open(path))
    state.update(change)
    json.dump(state, open(path, "w"))
    with pytest.raises(NpbertError, match="the training state is corrupt"):
        pretrain(options(tmp_path, data_dir, steps=7), resume=True, log=quiet)


def test_finetune_resume_of_a_pretraining_run_names_the_right_command(tmp_path, trained, capsys):
    assert main(["finetune", "--out", trained, "--resume"]) == 2
    assert capsys.readouterr().err == (f"npbert finetune: error: {trained} is a run of `npbert pretrain`, not of "
                                       f"`npbert finetune`: continue it with `npbert pretrain --out {trained} "
                                       "--resume`\n")


# --- resume on the same data ---------------------------------------------------------------------------

def test_resume_from_another_directory_reads_the_same_data_or_refuses(tmp_path, monkeypatch):
    a, b = tmp_path / "A", tmp_path / "B"
    for d, docs in ((a, 30), (b, 40)):
        prepare(PrepareOptions(out=str(d / "data"), max_documents=docs, dupe_factor=1, max_seq_length=32, seed=3),
                log=quiet)
    monkeypatch.chdir(a)
    first = options(tmp_path, "data", out="run", steps=6, stop_after=3)
    assert pretrain(first, log=quiet)["stopped"]
    monkeypatch.chdir(b)
    with pytest.raises(NpbertError, match=f"--data {b / 'data'} cannot change when resuming: .* started with --data "
                                          f"{a / 'data'}"):
        pretrain(options(tmp_path, "data", out="../A/run", steps=6), resume=True, given={"data", "out"}, log=quiet)
    r = pretrain(options(tmp_path, "data", out="../A/run", steps=6), resume=True, given={"out"}, log=quiet)
    assert r["step"] == 6                                  # the run's own data, wherever the resume starts from
    assert saved_step(a / "run") == 6


def test_resume_refuses_data_that_changed(tmp_path):
    data = str(tmp_path / "data")
    prepare(PrepareOptions(out=data, max_documents=30, dupe_factor=1, max_seq_length=32, seed=3), log=quiet)
    assert pretrain(options(tmp_path, data, steps=6, stop_after=3), log=quiet)["stopped"]
    with open(os.path.join(data, "manifest.json"), "a") as f:
        f.write(" ")
    with pytest.raises(NpbertError, match="has changed since the run in .* started on it"):
        pretrain(options(tmp_path, data, steps=6), resume=True, log=quiet)


def test_a_retry_after_a_failed_first_run_reads_the_edited_corpus(tmp_path, monkeypatch):
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"document {i} begins here .\nand it ends here .\n\n" for i in range(30)))
    import npbert.pretraining.job as job
    monkeypatch.setattr(job, "pretraining_forward", lambda *a, **k: (_ for _ in ()).throw(MemoryError("simulated")))
    opts = options(tmp_path, None, corpus=str(corpus), max_seq_length=32, steps=2)
    with pytest.raises(MemoryError):
        pretrain(opts, log=quiet)
    monkeypatch.undo()
    corpus.write_text("".join(f"story {i} starts now .\nit stops right here .\n\n" for i in range(30)))
    said = []
    pretrain(opts, log=said.append)
    assert any("was prepared from another corpus or other options: preparing it again" in s for s in said)
    vocab = open(tmp_path / "run" / "data" / "vocab.txt").read().split()
    assert "story" in vocab and "document" not in vocab


# --- messages: how a run ended -------------------------------------------------------------------------

def test_ctrl_c_and_stop_after_say_how_the_run_ended(tmp_path, data_dir):
    said = []

    def interrupt_at_step_2(line, *a, **k):
        said.append(line)
        if line.startswith("step     2/"):
            os.kill(os.getpid(), signal.SIGINT)
    pretrain(options(tmp_path, data_dir, steps=6), log=interrupt_at_step_2)
    assert said[-1].startswith("npbert pretrain: interrupted at step 2; saved ")
    said.clear()
    pretrain(options(tmp_path, data_dir, steps=6, stop_after=4), resume=True, log=said.append)
    assert said[-1].startswith("stopped at step 4 (--stop-after 4); saved ")


def test_a_ctrl_c_during_the_last_step_is_not_swallowed(tmp_path, data_dir, monkeypatch):
    """Before: a Ctrl-C during the last step's evaluation (where Numba loads the evaluation's
    kernels the first time) was taken as "stop after this step", which was the last: the run
    went on to its final evaluation and exited 0."""
    import npbert.pretraining.job as job
    real = job.PretrainingJob.after_step

    def ctrl_c_in_the_last_evaluation(self, position, epoch_ended, done):
        if done:
            os.kill(os.getpid(), signal.SIGINT)
        real(self, position, epoch_ended, done)
    monkeypatch.setattr(job.PretrainingJob, "after_step", ctrl_c_in_the_last_evaluation)
    r = pretrain(options(tmp_path, data_dir, steps=3), log=quiet)
    assert r["stopped"] and r["step"] == 3 and records(tmp_path / "run", "final") == []
    monkeypatch.undo()
    r = pretrain(options(tmp_path, data_dir, steps=3), resume=True, log=quiet)   # --resume finishes it
    assert not r["stopped"] and len(records(tmp_path / "run", "final")) == 1


def test_the_final_evaluation_is_a_record_and_labelled_against_the_progress_lines(tmp_path, data_dir):
    said = []
    r = pretrain(options(tmp_path, data_dir, steps=4, eval_every=2, eval_batches=1, batch_size=4), log=said.append)
    final = records(tmp_path / "run", "final")
    assert len(final) == 1 and final[0]["mlm_acc"] == r["mlm_acc"] and final[0]["step"] == 4
    assert any(s.startswith("  held-out (4 of 10 pairs): mlm acc") for s in said)
    assert any(s.startswith("held-out MLM accuracy") and " on all " in s for s in said)
    pretrain(options(tmp_path, data_dir, steps=4, eval_every=2, eval_batches=1, batch_size=4), resume=True,
             log=quiet)                                    # a finished run, resumed: its final record once
    assert len(records(tmp_path / "run", "final")) == 1


def test_model_says_which_learning_rate_it_uses(tmp_path, data_dir, trained):
    said = []
    pretrain(options(tmp_path, data_dir, out=str(tmp_path / "more"), model=os.path.join(trained, "checkpoint"),
                     model_overrides=None, steps=2, learning_rate=1e-3), log=said.append)
    assert any(s.startswith("learning rate 0.001 (this run's --learning-rate), not the 0.003 ") for s in said)


def test_finetune_resume_of_a_finished_run_writes_its_test_record_once_and_names_the_split(tmp_path):
    from support.random_models import random_checkpoint
    micro = random_checkpoint(str(tmp_path / "micro"), layers=1, hidden=16)
    opts = FinetuneOptions(task="builtin-sentence", model=micro, out=str(tmp_path / "ft"), epochs=1,
                           max_train_examples=32, max_eval_examples=16, test="dev", batch_size=16)
    said = []
    finetune(opts, log=quiet)
    finetune(FinetuneOptions(out=opts.out, test="dev"), resume=True, given={"out", "test"}, log=said.append)
    tests = records(opts.out, "test")
    assert len(tests) == 1 and tests[0]["split"] == "dev"
    assert any(s.startswith("test on dev with the best model") for s in said)


# --- the data-loss items, run as a user would -------------------------------------------------------

def test_two_writers_at_once_one_is_refused_nothing_lost(tmp_path, data_dir):
    # the first cannot finish before the second has tried (far more steps than it is given time
    # for: Ctrl-C ends it), so the verdict does not hang on which process the machine runs first
    env = dict(os.environ, PYTHONPATH=os.getcwd(), NPBERT_BACKEND="numpy")
    cmd = [sys.executable, "-m", "npbert.cli", "pretrain", "--data", data_dir, "--out", str(tmp_path / "R"),
           "--batch-size", "4", "--preset", "tiny", "--eval-every", "0", "--save-every", "5"]
    first = subprocess.Popen(cmd + ["--steps", "1000000", "--seed", "1"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        while not os.path.exists(tmp_path / "R" / "checkpoint") and first.poll() is None:
            time.sleep(0.05)                               # the first has saved: --overwrite would replace it
        second = subprocess.run(cmd + ["--steps", "150", "--seed", "2", "--overwrite"], env=env, capture_output=True,
                                text=True, timeout=HANG_SECONDS)
    finally:
        first.send_signal(signal.SIGINT)                   # Ctrl-C: it saves and ends
        said = "".join(first.communicate(timeout=HANG_SECONDS))
    assert first.returncode == 130 and "npbert pretrain: interrupted at step" in said, said[-2000:]
    assert second.returncode == 2 and "is in use by another npbert process" in second.stderr
    assert json.load(open(tmp_path / "R" / "checkpoint" / "training_state.json"))["options"]["seed"] == 1
