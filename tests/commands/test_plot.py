"""`npbert plot RUN_DIR`: real short pretraining and fine-tuning runs drawn into a PNG whose panels
hold the log's series, and a clear one-line error for every run directory or log it cannot draw."""
import json
import os
import re
import struct

import pytest

from npbert import plotting
from npbert.cli import main
from npbert.data.prepare import PrepareOptions, prepare
from npbert.finetuning.recipe import FinetuneOptions, finetune
from npbert.plotting import PNG_SIGNATURE
from npbert.pretraining.recipe import PretrainOptions, pretrain
from npbert.run_plot import draw, read_metrics
from support.patience import call_beside_fifos

needs_matplotlib = pytest.mark.skipif(plotting.load_pyplot() is None,
                                      reason="matplotlib is not installed (pip install 'npbert[plot]')")


def quiet(*args, **kwargs):
    pass


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A 12-step pretraining run of a 1-layer model (held-out evaluation twice), and a 2-epoch
    fine-tuning run from its checkpoint with a test score: the logs `npbert plot` is for."""
    root = tmp_path_factory.mktemp("runs")
    data = str(root / "data")
    prepare(PrepareOptions(corpus="builtin", out=data, max_documents=24, dupe_factor=1, max_seq_length=32, seed=3),
            log=quiet)
    small = dict(num_hidden_layers=1, hidden_size=16, num_attention_heads=2, intermediate_size=32,
                 max_position_embeddings=64)
    pretrain(PretrainOptions(out=str(root / "pt"), data=data, model_overrides=small, steps=12, batch_size=8,
                             log_every=2, eval_every=6, eval_batches=2), log=quiet)
    finetune(FinetuneOptions(task="builtin-sentence", model=str(root / "pt" / "checkpoint"), out=str(root / "ft"),
                             epochs=2, max_train_examples=64, max_eval_examples=32, batch_size=16, log_every=1,
                             test="test"), log=quiet)
    return str(root / "pt"), str(root / "ft")


def png_size(path):
    """(width, height) from a PNG's header, after checking its signature."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == PNG_SIGNATURE and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def panels(run_dir):
    """{panel title: {legend label: (xs, ys)}} of the figure drawn from a run's log."""
    plt = plotting.load_pyplot()
    records, _ = read_metrics(os.path.join(run_dir, "metrics.jsonl"))
    fig = draw(plt, records, pretraining=any("mlm_acc" in r for r in records), title="t")
    try:
        return {ax.get_title(): {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
                                 for line in ax.get_lines()} for ax in fig.axes}
    finally:
        plt.close(fig)


def lr_axis_label(run_dir):
    plt = plotting.load_pyplot()
    records, _ = read_metrics(os.path.join(run_dir, "metrics.jsonl"))
    fig = draw(plt, records, pretraining=True, title="t")
    try:
        return next(ax.get_xlabel() for ax in fig.axes if ax.get_title() == "learning rate")
    finally:
        plt.close(fig)


def log_of(run_dir, kind, field):
    records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    return [r["step"] for r in records if r["kind"] == kind], [r[field] for r in records if r["kind"] == kind]


@needs_matplotlib
def test_a_pretraining_run_is_drawn_with_its_baselines(runs, capsys):
    pt, _ = runs
    assert main(["plot", pt]) == 0
    out = capsys.readouterr().out
    assert png_size(os.path.join(pt, "metrics.png")) == (1200, 800)
    assert os.path.getsize(os.path.join(pt, "metrics.png")) > 20_000          # four drawn panels, not a blank
    assert f"into {os.path.join(pt, 'metrics.png')} (inside the run directory)" in out
    assert re.search(r"\n  train +6 points", out) and re.search(r"\n  held-out +2 points", out) and "baseline" in out
    drawn = panels(pt)
    assert set(drawn) == {"loss", "MLM and NSP accuracy against the baselines", "learning rate", "training speed"}
    scores = drawn["MLM and NSP accuracy against the baselines"]
    final = "final held-out (all pairs)"
    assert set(scores) == {f"{k} {f}" for k in ("train", "held-out", final, "baseline") for f in ("mlm_acc", "nsp_acc")}
    assert scores["held-out mlm_acc"] == log_of(pt, "eval", "mlm_acc")
    assert scores[f"{final} mlm_acc"] == log_of(pt, "final", "mlm_acc")        # the run's result, drawn
    assert scores["baseline nsp_acc"][1] == [log_of(pt, "baseline", "nsp_acc")[1][0]] * 2    # a level line
    assert drawn["learning rate"]["train lr"] == log_of(pt, "train", "lr")
    assert lr_axis_label(pt) == "step (logged every 2 steps, from step 2)"   # why the line does not start at 0
    assert {"train loss", "held-out mlm_loss", "held-out nsp_loss"} <= set(drawn["loss"])


@needs_matplotlib
def test_a_finetuning_run_is_drawn_with_its_dev_and_test_scores(runs, tmp_path, capsys):
    _, ft = runs
    picture = str(tmp_path / "ft.png")
    assert main(["plot", ft, "--out", picture]) == 0
    assert png_size(picture) == (1200, 800) and not os.path.exists(os.path.join(ft, "metrics.png"))
    out = capsys.readouterr().out
    assert "a fine-tuning run" in out and re.search(r"\n  dev +2 points +accuracy", out)
    assert re.search(r"\n  test +1 point +accuracy", out)
    scores = panels(ft)["dev metrics against the baselines"]
    assert set(scores) == {"dev accuracy", "test accuracy", "baseline accuracy"}
    assert scores["dev accuracy"] == log_of(ft, "eval", "accuracy")
    assert main(["plot", ft, "--out", picture]) == 0                 # its own picture: replaced


@needs_matplotlib
def test_a_run_pretrained_without_nsp_is_drawn_as_mlm_only(tmp_path, capsys):
    records = [dict(kind="baseline", step=0, mlm_acc=0.08),
               dict(kind="train", step=1, lr=0.1, grad_norm=1.0, tokens_per_s=10.0, loss=5.0, mlm_loss=5.0, mlm_acc=0.1),
               dict(kind="eval", step=1, mlm_loss=4.9, mlm_acc=0.11)]
    run = write_log(tmp_path, "".join(json.dumps(r) + "\n" for r in records))
    assert main(["plot", run]) == 0
    assert "drew loss, MLM accuracy against the baselines," in capsys.readouterr().out
    assert set(panels(run)["MLM accuracy against the baselines"]) == {"train mlm_acc", "held-out mlm_acc",
                                                                       "baseline mlm_acc"}


def test_without_matplotlib_it_says_how_to_install_it(runs, tmp_path, monkeypatch, capsys):
    pt, _ = runs
    monkeypatch.setattr(plotting, "load_pyplot", lambda: None)
    assert main(["plot", pt, "--out", str(tmp_path / "p.png")]) == 2
    captured = capsys.readouterr()
    assert "pip install 'npbert[plot]'" in captured.err and captured.err.startswith("npbert plot: error: ")
    assert "held-out" in captured.out                                   # the text summary still comes
    assert not os.path.exists(tmp_path / "p.png")


def write_log(tmp_path, text):
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "metrics.jsonl").write_bytes(text.encode("utf-8"))
    return str(run)


TRAIN = json.dumps(dict(kind="train", step=1, lr=0.1, grad_norm=1.0, tokens_per_s=10.0, loss=2.0)) + "\n"


@pytest.mark.parametrize("make, message", [
    (lambda t: str(t / "nowhere"), "nowhere does not exist: give the run directory"),
    (lambda t: (t / "f").write_text("x") and str(t / "f"), "is not a directory"),
    (lambda t: str(t), "has no metrics.jsonl"),
    (lambda t: write_log(t, ""), "metrics.jsonl holds no record: the run has not logged a step yet"),
    (lambda t: write_log(t, '{"kind": "tr'), "holds no record"),                  # only a line being written
    (lambda t: write_log(t, TRAIN + "{oops\n" + TRAIN), "metrics.jsonl line 2: not a JSON record"),
    (lambda t: write_log(t, TRAIN + "[1, 2]\n"), "line 2: a list, not a JSON object"),
    (lambda t: write_log(t, '{"kind": "machine", "step": 1}\n'), "line 1: kind 'machine' is not one of"),
    (lambda t: write_log(t, '{"kind": "train"}\n'), "line 1: step None is not a whole number"),
    (lambda t: write_log(t, TRAIN.replace("2.0", '"high"')), "line 1: loss is 'high', not a number"),
], ids=["missing-dir", "a-file", "no-log", "empty", "only-partial", "corrupt", "not-object", "kind", "step",
        "value"])
def test_what_cannot_be_drawn_is_refused_in_one_line(tmp_path, capsys, make, message):
    assert main(["plot", make(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("npbert plot: error: ") and message in err and err.count("\n") == 1


def test_an_unfinished_last_line_is_skipped_and_said(tmp_path):
    """A run killed in the middle of writing a record (or writing one now) leaves it unterminated."""
    records, skipped = read_metrics(os.path.join(write_log(tmp_path, TRAIN + TRAIN + '{"kind": "tr'),
                                                 "metrics.jsonl"))
    assert len(records) == 2 and skipped


@pytest.mark.parametrize("existing, message", [
    (b"my notes", "exists and was not drawn by npbert: not overwritten"),
    (PNG_SIGNATURE + b"\x00" * 100, "exists and was not drawn by npbert"),       # someone else's PNG
])
def test_a_file_npbert_did_not_draw_is_never_overwritten(tmp_path, capsys, existing, message):
    run = write_log(tmp_path, TRAIN)
    (tmp_path / "run" / "metrics.png").write_bytes(existing)
    assert main(["plot", run]) == 2
    assert message in capsys.readouterr().err
    assert (tmp_path / "run" / "metrics.png").read_bytes() == existing


def test_a_fifo_where_the_picture_goes_is_refused_unopened(tmp_path, capsys):
    # before: opened to see whether npbert drew it, which waits for a writer forever
    run = write_log(tmp_path, TRAIN)
    os.mkfifo(tmp_path / "run" / "metrics.png")
    assert call_beside_fifos(lambda: main(["plot", run]), tmp_path / "run" / "metrics.png") == 2
    err = capsys.readouterr().err
    assert err.startswith("npbert plot: error: ") and err.count("\n") == 1
    assert "metrics.png: it is a FIFO (named pipe), not a regular file" in err


def test_out_must_be_a_png_in_an_existing_directory(tmp_path, capsys):
    run = write_log(tmp_path, TRAIN)
    for out, message in ((str(tmp_path / "m.pdf"), "the picture is a PNG"),
                         (str(tmp_path / "no" / "m.png"), "does not exist"),
                         (str(tmp_path / "d.png"), "is a directory")):
        os.makedirs(tmp_path / "d.png", exist_ok=True)
        assert main(["plot", run, "--out", out]) == 2
        assert message in capsys.readouterr().err


@needs_matplotlib
def test_baselines_at_one_value_are_one_line_and_the_legend_is_below_the_curves(tmp_path):
    # a tagger's majority baseline scores precision, recall and F1 of 0: three dashed lines drawn
    # over each other looked like one unlabelled line
    log = [dict(kind="baseline", step=0, precision=0.0, recall=0.0, f1=0.0, accuracy=0.8)]
    log += [dict(kind="eval", step=s, precision=0.1 * s, recall=0.1 * s, f1=0.1 * s, accuracy=0.8 + 0.01 * s,
                 loss=1.0 / s) for s in (1, 2, 3)]
    drawn = panels(write_log(tmp_path, "".join(json.dumps(r) + "\n" for r in log)))
    scores = next(lines for title, lines in drawn.items() if "accuracy" in " ".join(lines))
    baselines = [label for label in scores if label.startswith("baseline")]
    assert sorted(baselines) == ["baseline accuracy", "baseline precision, recall, f1 (all 0)"]
    plt = plotting.load_pyplot()
    fig = draw(plt, read_metrics(os.path.join(tmp_path, "run", "metrics.jsonl"))[0], pretraining=False, title="t")
    try:
        for ax in fig.axes:
            if ax.get_legend() is not None:                                # below the panel's own area
                fig.canvas.draw()
                legend_box, axes_box = ax.get_legend().get_window_extent(), ax.get_window_extent()
                assert legend_box.y1 <= axes_box.y0 + 1
    finally:
        plt.close(fig)
