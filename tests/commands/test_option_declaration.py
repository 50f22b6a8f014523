"""Each option declared once (npbert/option_declaration.py): its dataclass field, its argparse
line, its range check and README's table of ranges all come from the one declaration, so they
cannot disagree; a toy option added to `npbert pretrain`'s declarations shows up in them all."""
import argparse
import dataclasses
import re

import pytest

import npbert.pretraining.recipe
from npbert.cli import build_parser, main
from npbert.option_table import option_table
from npbert.data.prepare_options import PrepareOptions
from npbert.errors import NpbertError
from npbert.finetuning.recipe import FinetuneOptions
from npbert.option_declaration import Integer, Option, check_ranges, declarations, options_record
from npbert.pretraining.pretrain_options import PRETRAIN_OPTIONS
from support.paths import ROOT

README = ROOT / "README.md"


def subcommands():
    return next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_readme_holds_the_table_of_ranges_the_declarations_make():
    """python -m npbert.option_table prints it; paste its output into README."""
    text = open(README, encoding="utf-8").read()
    table = option_table(build_parser())
    assert table in text, "README's table of ranges is out of date: python -m npbert.option_table"
    assert text.count("| range | options |") == 1


@pytest.mark.parametrize("command, record", [("pretrain", npbert.pretraining.recipe.PretrainOptions),
                                             ("finetune", FinetuneOptions), ("prepare", PrepareOptions)])
def test_every_argument_is_its_declaration(command, record):
    """The parser's arguments and the record's fields are the declarations: same names, defaults,
    ranges and choices (the run's own --resume, --overwrite, --backend aside)."""
    actions, opposites = {}, {}
    for a in subcommands()[command]._actions:
        if a.option_strings and a.dest != "help":
            (opposites if a.dest in actions else actions)[a.dest] = a      # a flag's opposite comes second
    for o in declarations(record):
        assert getattr(record(), o.name) == o.default
        if not o.command_line:
            assert o.name not in actions
            continue
        a = actions.pop(o.name)
        assert (a.option_strings[0], a.default, a.help) == (o.option_string, o.default, o.help)
        assert getattr(a.type, "range", None) == (o.range.text if o.range else None)
        assert a.choices == (list(o.choices) if o.choices else None)
        if o.opposite is not None:                              # --nsp: the other value of --no-nsp's field
            b = opposites.pop(o.name)
            assert (b.option_strings, b.default, b.const) == ([o.opposite], o.default, not a.const)
    assert set(actions) <= {"resume", "overwrite", "backend"} and not opposites


TOY = Option("toy_rounds", 3, "rounds of the toy", Integer(2))


@pytest.fixture
def with_toy_option(monkeypatch):
    """PretrainOptions made with one more declaration, as if it were written in PRETRAIN_OPTIONS."""
    record = options_record("PretrainOptions", PRETRAIN_OPTIONS + (TOY,), "npbert.pretraining.pretrain_options")
    monkeypatch.setattr(npbert.pretraining.recipe, "PretrainOptions", record)
    return record


def test_an_option_declared_once_is_in_the_help_the_checks_and_the_table(with_toy_option, tmp_path, capsys):
    assert with_toy_option().toy_rounds == 3                                             # the dataclass
    help_text = " ".join(subcommands()["pretrain"].format_help().split())
    assert "--toy-rounds TOY_ROUNDS rounds of the toy (an integer >= 2) (default: 3)" in help_text   # --help
    assert re.search(r"^\| an integer >= 2 \| `--toy-rounds` \|$", option_table(build_parser()), re.M)  # README's
    with pytest.raises(SystemExit) as exit_:                                             # the command line
        main(["pretrain", "--out", str(tmp_path / "run"), "--toy-rounds", "1"])
    assert exit_.value.code == 2
    assert "argument --toy-rounds: must be an integer >= 2, got 1" in capsys.readouterr().err
    with pytest.raises(NpbertError, match="--toy-rounds must be an integer >= 2, got 1"):   # the Python API
        npbert.pretraining.recipe.pretrain(with_toy_option(out=str(tmp_path / "run"), toy_rounds=1))
    assert not (tmp_path / "run").exists()


def test_none_is_refused_where_the_default_is_a_number():
    check_ranges(FinetuneOptions(max_seq_length=None, hidden_dropout_prob=None))        # None: decided later
    with pytest.raises(NpbertError, match="--epochs must be an integer >= 1, got None"):
        check_ranges(FinetuneOptions(epochs=None))
    with pytest.raises(NpbertError, match="--features 'bogus' is not one of fine-tune, "):
        check_ranges(FinetuneOptions(features="bogus"))


def test_the_records_keep_their_methods_and_compare_by_value():
    opts = FinetuneOptions(doc_stride=7)
    assert opts.qa().doc_stride == 7 and opts == FinetuneOptions(doc_stride=7)
    assert dataclasses.replace(opts, epochs=1).epochs == 1 and type(opts)(**vars(opts)) == opts
