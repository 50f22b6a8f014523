"""The run directory: nothing a user made is lost (--overwrite, --resume, a failed first run)."""
import json
import os

import pytest

from npbert.cli import main
from npbert.errors import DataError, NpbertError
from npbert.pretraining.recipe import PretrainOptions, pretrain
from support.pretraining_runs import data_dir, options, quiet, saved_step  # noqa: F401  (data_dir: a fixture)


# --- the run directory: nothing a user made is lost -------------------------------------------------

@pytest.fixture
def trained(tmp_path, data_dir):
    """A run that saved, at step 7."""
    pretrain(options(tmp_path, data_dir, steps=7), log=quiet)
    return str(tmp_path / "run")


def test_overwrite_with_bad_input_keeps_the_earlier_run(tmp_path, data_dir, trained):
    before = sorted(os.listdir(trained))
    with pytest.raises(DataError, match="corpus file not found: typo.txt"):
        pretrain(options(tmp_path, data_dir, data=None, corpus="typo.txt"), overwrite=True, log=quiet)
    (tmp_path / "binary.txt").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(DataError, match="not UTF-8"):
        pretrain(options(tmp_path, data_dir, data=None, corpus=str(tmp_path / "binary.txt")), overwrite=True,
                 log=quiet)
    (tmp_path / "one.txt").write_text("one short document .\nwith two sentences .\n")
    said = []
    with pytest.raises(DataError, match="document"):
        pretrain(options(tmp_path, data_dir, data=None, corpus=str(tmp_path / "one.txt")), overwrite=True,
                 log=said.append)
    assert f"the earlier run in {trained} is back as it was" in said
    with pytest.raises(NpbertError, match="--steps must be an integer >= 1, got 0"):
        pretrain(options(tmp_path, data_dir, steps=0), overwrite=True, log=quiet)
    assert sorted(os.listdir(trained)) == before and saved_step(trained) == 7
    assert [e for e in os.listdir(tmp_path) if e.startswith(".")] == []


def test_overwrite_replaces_the_run_at_its_first_save(tmp_path, data_dir, trained, monkeypatch):
    import npbert.training.run_dir as run_dir
    seen = {}
    real = run_dir.RunDir.saved

    def saved(self, step=None):
        seen.setdefault("aside before the first save", self.aside is not None and os.path.isdir(self.aside))
        real(self, step)
    monkeypatch.setattr(run_dir.RunDir, "saved", saved)
    pretrain(options(tmp_path, data_dir, steps=3, save_every=1), overwrite=True, log=quiet)
    assert seen["aside before the first save"] and saved_step(trained) == 3
    assert [e for e in os.listdir(tmp_path) if e.startswith(".")] == []


def test_overwrite_refuses_a_directory_that_is_not_a_run(tmp_path, data_dir):
    thesis = tmp_path / "run" / "thesis.txt"
    thesis.parent.mkdir()
    thesis.write_text("four years of work")
    for overwrite in (False, True):
        with pytest.raises(NpbertError, match="is not an npbert run .* will not write into it or delete it"):
            pretrain(options(tmp_path, data_dir), overwrite=overwrite, log=quiet)
    assert thesis.read_text() == "four years of work" and os.listdir(thesis.parent) == ["thesis.txt"]


def test_out_that_is_a_file_is_refused(tmp_path, data_dir, capsys):
    (tmp_path / "run").write_text("not a directory")
    for out, said in ((tmp_path / "run", "is an existing file, not a directory"),
                      (tmp_path / "run" / "sub", f"cannot be made: {tmp_path / 'run'} is a file")):
        for extra in ([], ["--overwrite"], ["--resume"]):
            assert main(["pretrain", "--data", data_dir, "--out", str(out)] + extra) == 2
            assert capsys.readouterr().err == f"npbert pretrain: error: output directory {out} {said}\n"
    assert (tmp_path / "run").read_text() == "not a directory"


def test_a_kill_during_overwrite_is_undone_by_the_next_command(tmp_path, data_dir, trained):
    """Killed after moving the old run aside and before the new one saved: the next command on
    that --out puts the old run back (the process that made the aside is gone)."""
    dead = 2 ** 22 + 12345                               # above pid_max's default: no such process
    aside = tmp_path / f".run.replaced-{dead}-0123abcd"
    os.rename(trained, aside)
    os.makedirs(os.path.join(trained, "data"))           # what the killed run had made of the new one
    with open(os.path.join(trained, "npbert_run.json"), "w") as f:
        f.write("{}")
    assert pretrain(options(tmp_path, data_dir, steps=7), resume=True, log=quiet)["step"] == 7
    assert saved_step(trained) == 7 and not aside.exists() and not os.path.exists(os.path.join(trained, "data"))


def test_a_failed_first_run_does_not_block_the_retry(tmp_path, data_dir, monkeypatch):
    one = tmp_path / "one.txt"
    one.write_text("one short document .\nwith two sentences .\n")
    with pytest.raises(DataError, match="document"):
        pretrain(options(tmp_path, data_dir, data=None, corpus=str(one), max_seq_length=32), log=quiet)
    assert not (tmp_path / "run").exists()               # nothing of it was kept
    corpus = tmp_path / "fixed.txt"
    corpus.write_text("".join(f"document {i} begins here .\nand it ends here .\n\n" for i in range(30)))
    first = options(tmp_path, data_dir, data=None, corpus=str(corpus), max_seq_length=32, steps=4, save_every=100)
    import npbert.pretraining.job as pretrain_module
    real = pretrain_module.pretraining_forward

    def crash_at_step_3(*args, **kwargs):
        if kwargs.get("rng") is not None and len(crash_at_step_3.calls) == 2:
            raise MemoryError("out of memory (simulated)")
        crash_at_step_3.calls.append(1)
        return real(*args, **kwargs)
    crash_at_step_3.calls = []
    monkeypatch.setattr(pretrain_module, "pretraining_forward", crash_at_step_3)
    with pytest.raises(MemoryError):                     # the data is prepared, no checkpoint was saved
        pretrain(first, log=quiet)
    monkeypatch.setattr(pretrain_module, "pretraining_forward", real)
    assert (tmp_path / "run" / "data" / "manifest.json").exists()
    with pytest.raises(NpbertError, match="stopped before it saved a checkpoint; run the same command again"):
        pretrain(first, resume=True, log=quiet)
    said = []
    assert pretrain(first, log=said.append)["step"] == 4          # the same command again: no --overwrite needed
    assert not any("already exists" in line for line in said)



def test_resume_refuses_options_that_would_change_the_run(tmp_path, data_dir):
    pretrain(options(tmp_path, data_dir, stop_after=5), log=quiet)
    for change, flag in ((dict(steps=60), "--steps 60"), (dict(preset="mini"), "--preset mini"),
                         (dict(learning_rate=1.0), "--learning-rate 1.0")):
        with pytest.raises(NpbertError, match=f"{flag} cannot change when resuming: .* started with"):
            pretrain(options(tmp_path, data_dir, **change), resume=True, log=quiet)
    with pytest.raises(NpbertError, match="--resume and --overwrite contradict each other"):
        pretrain(options(tmp_path, data_dir), resume=True, overwrite=True, log=quiet)
    r = pretrain(options(tmp_path, data_dir, log_every=7, eval_every=9, save_every=11), resume=True, log=quiet)
    assert r["step"] == 40                               # what is logged, evaluated, saved may change


def test_cli_resume_refuses_typed_options_that_would_change_the_run(tmp_path, data_dir, capsys):
    from npbert.pretraining.pretrain_options import DEFAULT_STEPS as default_steps
    out = str(tmp_path / "run")
    base = ["pretrain", "--data", data_dir, "--out", out, "--batch-size", "4", "--eval-batches", "1"]
    assert main(base + ["--steps", "6", "--stop-after", "2"]) == 0
    for flags, said in ((["--steps", "60"], "--steps 60 cannot change when resuming"),
                        (["--steps", str(default_steps)], f"--steps {default_steps} cannot change"),  # the default, typed
                        (["--preset", "mini"], "--preset mini cannot change"),
                        (["--learning-rate", "1"], "--learning-rate 1.0 cannot change"),
                        (["--no-nsp"], "--no-nsp True cannot change when resuming: the run in"),
                        (["--mask-mix", "100/0/0"], "--mask-mix 100/0/0 cannot change"),
                        (["--overwrite"], "--resume and --overwrite contradict each other")):
        assert main(base + ["--resume"] + flags) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1, err
    assert main(base + ["--resume", "--log-every", "1"]) == 0                 # what is logged may change
    assert "step     6/6" in capsys.readouterr().out


def test_cli_without_out_does_not_collide_with_an_earlier_run(tmp_path, data_dir, monkeypatch, capsys):
    """The README's first command can be run twice: the second run goes beside the first."""
    monkeypatch.chdir(tmp_path)
    cmd = ["pretrain", "--data", data_dir, "--steps", "2", "--batch-size", "4", "--eval-batches", "1"]
    assert main(cmd) == 0 and main(cmd) == 0
    out = capsys.readouterr().out
    assert "runs/pretrain holds an earlier run (continue it with --resume, replace it with --overwrite); " \
           "this run goes to runs/pretrain-2" in out
    assert saved_step("runs/pretrain") == 2 and saved_step("runs/pretrain-2") == 2
    assert main(cmd + ["--resume"]) == 0 and "runs/pretrain-3" not in capsys.readouterr().out


def test_ctrl_c_while_pretrain_prepares_its_corpus_leaves_nothing_that_blocks_the_retry(tmp_path, monkeypatch,
                                                                                        capsys):
    """Ctrl-C during WordPiece training (before any step): one line, exit 130, and the same
    command then runs (no "already exists", no half-prepared data in the way)."""
    import npbert.tokenizer.trainer
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"document {i} begins here .\nand it ends there .\n\n" for i in range(30)))
    cmd = ["pretrain", "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--max-seq-length", "32",
           "--vocab-size", "64", "--steps", "2", "--batch-size", "4", "--eval-batches", "1"]
    real = npbert.tokenizer.trainer.train_wordpiece_vocab

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(npbert.tokenizer.trainer, "train_wordpiece_vocab", interrupted)
    assert main(cmd) == 130
    assert capsys.readouterr().err == "npbert pretrain: interrupted\n"
    monkeypatch.setattr(npbert.tokenizer.trainer, "train_wordpiece_vocab", real)
    assert main(cmd) == 0 and saved_step(str(tmp_path / "run")) == 2


def test_the_advice_to_hold_no_documents_out_leads_to_a_run(tmp_path, capsys):
    """A corpus too small to hold documents out: the error advises --heldout-fraction 0, and
    pretraining with it trains and saves, saying there is no held-out evaluation (it used to
    stop at "has no split 'heldout'")."""
    corpus = tmp_path / "three.txt"
    corpus.write_text("".join(f"document {i} is here .\nit has two lines .\n\n" for i in range(3)))
    cmd = ["pretrain", "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--max-seq-length", "32",
           "--vocab-size", "40", "--steps", "2", "--batch-size", "2"]
    assert main(cmd) == 2 and "or hold none out with --heldout-fraction 0" in capsys.readouterr().err
    assert main(cmd + ["--heldout-fraction", "0"]) == 0
    out = capsys.readouterr().out
    assert "no held-out documents (prepared with --heldout-fraction 0): no held-out evaluation" in out
    assert saved_step(str(tmp_path / "run")) == 2
