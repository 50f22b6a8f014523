"""One writer per directory (npbert/lock.py), attacked with real
processes, links, FIFOs, read-only and full file systems: every spelling of a directory takes one
lock, a planted link or FIFO is refused without being written through or read, a lock file that
cannot be made is one line, a deleted lock file lets no second writer in, two prepares never
mix, and SIGTERM saves like Ctrl-C and leaves no lock behind."""
import json
import os
import signal
import subprocess
import sys

import pytest

from support.hostile import NPBERT, Background, env, npbert, run_on_full_disk, run_unwritable
from npbert.cli import main
from npbert.errors import NpbertError
from npbert.data.pretraining_data import PretrainingData
from npbert.lock import lock_path, run_lock
from support.patience import call_beside_fifos
from support.pretraining_runs import data_dir, options, pretrain, quiet, saved_step  # noqa: F401  (data_dir: a fixture)

FOREVER = ["--steps", "1000000", "--batch-size", "4", "--preset", "tiny", "--eval-every", "0", "--log-every", "50",
           "--backend", "numpy"]                       # a run that is still going when the test is done with it
SHORT = ["--steps", "3", "--batch-size", "4", "--preset", "tiny", "--eval-every", "0", "--backend", "numpy"]


def one_line(stderr, command="pretrain") -> str:
    assert stderr.count("\n") == 1 and stderr.startswith(f"npbert {command}: error: "), stderr
    return stderr


def test_every_spelling_of_a_directory_names_one_lock(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "R").mkdir()
    (tmp_path / "alias").symlink_to("R")
    (tmp_path / "up").symlink_to(".")
    spellings = ["R", "./R/", "R/../R", str(tmp_path / "R"), "alias", "alias/", "up/R", "up/alias"]
    assert {lock_path(s) for s in spellings} == {str(tmp_path / ".R.lock")}


def test_a_run_through_a_link_to_a_running_run_is_refused(tmp_path, data_dir):
    # before: the lock was named from abspath, so `--out alias` (alias -> R) locked .alias.lock: both
    # runs said "model saved", the second's model was gone and metrics.jsonl interleaved both runs
    run, alias = tmp_path / "R", tmp_path / "alias"
    run.mkdir()
    alias.symlink_to("R")
    with Background("pretrain", "--data", data_dir, "--out", str(run), "--seed", "1", "--save-every", "0",
                    *FOREVER) as first:
        first.wait_for(run / "metrics.jsonl")          # training, nothing saved yet: a new run could take it over
        second = npbert("pretrain", "--data", data_dir, "--out", str(alias), "--seed", "2", *SHORT)
        assert second.returncode == 2 and f"in use by another npbert process (PID {first.proc.pid})" in second.stderr
    assert first.returncode == 130
    with Background("pretrain", "--data", data_dir, "--out", str(run), "--resume", "--save-every", "5",
                    "--steps", "1000000") as resumed:
        resumed.wait_for(tmp_path / ".R.lock")        # it holds the lock (its checkpoint is the first run's)
        for out, flags in ((alias, ["--resume"]), (f"{run}/../R", ["--resume"]), (f"{run}/", ["--overwrite", *SHORT])):
            second = npbert("pretrain", "--data", data_dir, "--out", str(out), *flags)
            assert second.returncode == 2 and f"in use by another npbert process (PID {resumed.proc.pid})" in \
                second.stderr, (out, second.stderr)
    assert resumed.returncode == 130
    steps = [r["step"] for r in map(json.loads, open(run / "metrics.jsonl")) if r["kind"] == "train"]
    assert steps == sorted(set(steps))                 # one run's records, each once
    assert not os.path.lexists(tmp_path / ".R.lock") and not os.path.lexists(tmp_path / ".alias.lock")


def test_a_link_planted_at_the_lock_path_is_never_written_through(tmp_path, data_dir, capsys):
    # before: the lock was opened following links: p.txt then held a PID (a dangling link made its target)
    (tmp_path / "p.txt").write_text("precious\n")
    (tmp_path / ".L.lock").symlink_to("p.txt")
    (tmp_path / ".M.lock").symlink_to("missing.txt")
    for out in ("L", "M"):
        assert main(["pretrain", "--data", data_dir, "--out", str(tmp_path / out), *SHORT]) == 2
        assert "is a symbolic link: npbert does not write through it" in one_line(capsys.readouterr().err)
    assert (tmp_path / "p.txt").read_text() == "precious\n"
    assert sorted(os.listdir(tmp_path)) == [".L.lock", ".M.lock", "p.txt"]   # no target made, no run begun


def test_a_lock_path_that_is_a_directory_or_a_fifo_is_one_line(tmp_path, data_dir, capsys):
    # before: IsADirectoryError and an EINVAL traceback
    (tmp_path / ".D.lock").mkdir()
    os.mkfifo(tmp_path / ".F.lock")
    for out, says in (("D", "is a directory"), ("F", "is not a regular file")):
        code = call_beside_fifos(lambda: main(["pretrain", "--data", data_dir, "--out", str(tmp_path / out), *SHORT]),
                                 tmp_path / ".F.lock")
        assert code == 2 and says in one_line(capsys.readouterr().err)
    assert not (tmp_path / "D").exists() and not (tmp_path / "F").exists()


@pytest.mark.parametrize("command", [["pretrain", *SHORT], ["prepare", "--max-documents", "50"], ["golden"]])
def test_an_out_too_long_for_the_names_kept_beside_it_is_one_line(tmp_path, data_dir, capsys, command):
    # before: ENAMETOOLONG tracebacks, for the lock (.NAME.lock) or the run set aside (.NAME.replaced-...)
    out = str(tmp_path / ("n" * 250))
    extra = ["--data", data_dir] if command[0] == "pretrain" else []
    assert main([command[0], *extra, "--out", out, *command[1:]]) == 2
    assert "is 250 bytes long: npbert keeps hidden files beside it" in one_line(capsys.readouterr().err, command[0])
    assert os.listdir(tmp_path) == []


def test_an_unwritable_place_is_one_line_for_every_way_into_a_run(tmp_path, data_dir):
    # before: creating the lock was outside the failed-write handling: EACCES / EROFS tracebacks
    from support.random_models import random_checkpoint
    place = tmp_path / "place"
    pretrain(options(place, data_dir, steps=3), log=quiet)
    model = random_checkpoint(str(tmp_path / "model"), layers=1, hidden=16)
    for argv in (["pretrain", "--data", data_dir, "--out", f"{place}/new", *SHORT],
                 ["pretrain", "--out", f"{place}/run", "--resume"],
                 ["pretrain", "--data", data_dir, "--out", f"{place}/run", "--overwrite", *SHORT],
                 ["finetune", "--task", "builtin-sentence", "--model", model, "--out", f"{place}/ft", "--epochs", "1"]):
        proc, errno_text = run_unwritable(place, [*NPBERT, *argv])
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert f"cannot take the lock of {argv[argv.index('--out') + 1]}" in one_line(proc.stderr, argv[0])
        assert errno_text in proc.stderr
    assert sorted(os.listdir(place)) == ["run"] and saved_step(place / "run") == 3


@pytest.mark.parametrize("command", ["pretrain", "finetune"])
def test_a_full_disk_when_the_lock_is_written_is_one_line(tmp_path, data_dir, command):
    # before: an ENOSPC traceback writing the PID, for pretrain and finetune
    from support.random_models import random_checkpoint
    full = tmp_path / "full"
    full.mkdir()
    argv = (["pretrain", "--data", data_dir, *SHORT] if command == "pretrain" else
            ["finetune", "--task", "builtin-sentence", "--epochs", "1",
             "--model", random_checkpoint(str(tmp_path / "model"), layers=1, hidden=16)])
    proc = run_on_full_disk(full, [*NPBERT, *argv, "--out", f"{full}/R"])
    assert proc.returncode == 2 and "No space left on device" in one_line(proc.stderr, command), proc.stderr[-2000:]


def test_a_lock_file_deleted_under_a_writer_lets_no_second_writer_in(tmp_path, data_dir, capsys):
    # before: a second --resume took a new lock file and trained beside the first
    pretrain(options(tmp_path, data_dir, steps=5, stop_after=3), log=quiet)
    run = str(tmp_path / "run")
    with run_lock(run):                                # real flocks: a second open of the same files conflicts
        os.remove(lock_path(run))
        assert main(["pretrain", "--out", run, "--resume"]) == 2
        assert "is in use by another npbert process" in one_line(capsys.readouterr().err)
    assert saved_step(run) == 3
    assert main(["pretrain", "--out", run, "--resume"]) == 0 and saved_step(run) == 5


def test_two_prepares_into_one_out_never_mix(tmp_path):
    # before: prepare took no lock; with different seeds one directory held seed 1's manifest and first
    # shard and seed 2's second shard, and `pretrain --data` trained on it
    out = tmp_path / "P"
    small = ["--max-documents", "400", "--max-seq-length", "32", "--dupe-factor", "2"]
    with Background("prepare", "--out", str(out), "--seed", "1", *small, stop=None) as first:
        first.wait_for(tmp_path / ".P.lock")
        first.proc.send_signal(signal.SIGSTOP)          # holding the lock, not yet done: the second comes now
        try:
            second = npbert("prepare", "--out", str(out), "--seed", "2", *small)
        finally:
            first.proc.send_signal(signal.SIGCONT)
    assert first.returncode == 0, first.err[-2000:]
    assert second.returncode == 2 and f"in use by another npbert process (PID {first.proc.pid})" in second.stderr
    assert PretrainingData(str(out)).manifest["options"]["seed"] == 1
    again = npbert("prepare", "--out", str(out), "--seed", "2", *small)  # after it: other options are refused
    assert again.returncode == 2 and "prepared with other options: seed=1 (now 2)" in again.stderr


def test_sigterm_saves_like_ctrl_c_and_leaves_no_lock(tmp_path, data_dir):
    # before: SIGTERM (a service manager's stop, `kill PID`) ended a run as kill -9 does: no save, a stale lock
    run = tmp_path / "R"
    with Background("pretrain", "--data", data_dir, "--out", str(run), "--save-every", "5", *FOREVER,
                    stop=signal.SIGTERM) as first:
        first.wait_for(run / "checkpoint")
    assert first.returncode == 143, first.err[-2000:]
    step = saved_step(run)
    assert f"npbert pretrain: terminated (SIGTERM) at step {step}; saved {run}/checkpoint" in first.out
    assert "SIGTERM: finishing this step, then saving a resumable checkpoint" in first.out
    assert not os.path.lexists(tmp_path / ".R.lock")
    resumed = npbert("pretrain", "--out", str(run), "--resume", "--stop-after", str(step + 1))
    assert resumed.returncode == 0 and f"resuming {run} at step {step}" in resumed.stdout, resumed.stderr[-2000:]


def test_sigterm_ends_a_prepare_in_one_line_and_leaves_no_lock(tmp_path):
    out = tmp_path / "P"
    with Background("prepare", "--out", str(out), "--max-documents", "4000", stop=signal.SIGTERM) as first:
        first.wait_for(tmp_path / ".P.lock")
    assert first.returncode == 143 and first.err.endswith("npbert prepare: terminated\n"), first.err[-2000:]
    assert not os.path.lexists(tmp_path / ".P.lock")
    again = npbert("prepare", "--out", str(out), "--max-documents", "4000")
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(PretrainingData(str(out))) > 0


def test_the_locks_of_a_finished_a_refused_and_a_failed_run_are_gone(tmp_path, data_dir, capsys):
    run = str(tmp_path / "run")
    assert main(["pretrain", "--data", data_dir, "--out", run, *SHORT]) == 0
    assert main(["pretrain", "--data", data_dir, "--out", run, *SHORT]) == 2          # refused: it exists
    assert main(["pretrain", "--data", str(tmp_path / "none"), "--out", str(tmp_path / "r2"), *SHORT]) == 2
    capsys.readouterr()
    assert [e for e in os.listdir(tmp_path) if e.endswith(".lock")] == []


def test_a_sigkilled_holders_locks_go_with_it_and_a_live_ones_stand_beside_a_deleted_file(tmp_path):
    # the directory's own flock, like the file's, is released by the kernel when its holder dies
    run = tmp_path / "R"
    run.mkdir()
    code = "import sys; from npbert.lock import run_lock\nwith run_lock(sys.argv[1]):\n print('held', flush=True); sys.stdin.read()"
    holder = subprocess.Popen([sys.executable, "-c", code, str(run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env())
    try:
        assert holder.stdout.readline() == "held\n"
        os.remove(lock_path(run))
        with pytest.raises(NpbertError, match="in use by another npbert process"):
            with run_lock(str(run)):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with run_lock(str(run)):
        assert os.path.isfile(lock_path(run))
    assert sorted(os.listdir(tmp_path)) == ["R"]
