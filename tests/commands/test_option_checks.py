"""The commands' options: a number out of its range is one line before anything runs, the argument
types take their range and nothing else, every option has help that shows its range and default,
and argparse's own errors are one line too."""
import argparse
import os

import pytest

from npbert.cli import build_parser, main
from support.error_lines import one_error_line
from support.random_models import SENTENCE_TASK, sentence_model  # noqa: F401  (fixtures)


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
    from npbert.pretraining.recipe import PretrainOptions
    with pytest.raises(SystemExit):
        main(["pretrain", "--help"])
    text = " ".join(capsys.readouterr().out.split())                      # help lines unwrapped
    assert f"--batch-size BATCH_SIZE sequences per step (an integer >= 1) (default: {PretrainOptions().batch_size})" \
        in text
    assert "--steps STEPS training steps (batches) (an integer >= 1) (default: 2000, or what --budget plans)" in text
    assert f"--out OUT run directory; when not given and it holds a run, the next free one (runs/pretrain-2, ...) " \
           f"(default: {PretrainOptions().out})" in text


def test_gradcheck_has_a_description():
    assert "central finite differences" in subcommands()["gradcheck"].description


def test_every_command_has_a_description_in_its_help():
    # before: `npbert fill-mask --help` and `npbert bench --help` (and evaluate's, predict's) said
    # nothing about what the command does
    assert [name for name, parser in subcommands().items() if not (parser.description or "").strip()] == []
