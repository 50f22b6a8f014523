"""What a newcomer is told about fill-mask's input and where a demo's picture went."""
import os
import sys

import pytest

from npbert.cli import main
from support.random_models import pretrained_model  # noqa: F401  (fixture)
from support.paths import ROOT

DEMOS = ROOT / "demos"


def test_fill_mask_says_which_words_it_read_as_unk(pretrained_model, capsys):
    # before: the text came back as typed, with no word that the model had read "Zyxwq" as [UNK]
    assert main(["fill-mask", pretrained_model, "the Zyxwq went to the [MASK] , qqqz .", "--top-k", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "  read as [UNK] (not in the model's vocabulary): Zyxwq, qqqz"


def test_fill_mask_of_known_words_says_nothing_of_unk(pretrained_model, capsys):
    assert main(["fill-mask", pretrained_model, "the children play [MASK] ."]) == 0
    assert "[UNK]" not in capsys.readouterr().out


def test_a_demos_picture_is_named_by_its_absolute_path(tmp_path, monkeypatch, capsys):
    # before: "wrote 05_x.png", in whatever directory the demo was started from
    plt = pytest.importorskip("matplotlib.pyplot")
    monkeypatch.syspath_prepend(str(DEMOS))
    import demo_common
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["05_x.py"])
    demo_common.show(plt, plt.figure())
    assert capsys.readouterr().out == f"   wrote {tmp_path / '05_x.png'}\n" and os.path.isfile(tmp_path / "05_x.png")
