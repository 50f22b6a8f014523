"""`npbert plot RUN_DIR`: a training run's metrics.jsonl (npbert/training/metrics_log.py) drawn
as one PNG of four panels, and a few lines saying what was drawn:

    loss                  training (thin line) and held-out or dev (dots) losses, a test loss (star)
    accuracy / metrics    MLM and NSP accuracy (MLM only for a run with --no-nsp), or the task's
                          metrics, and the baseline (dashed) each must beat
    learning rate         warmup, then linear decay
    tokens/s              training speed

A panel draws every field of the records that belongs to it, one colour per field, so a field's
training and held-out values share a colour. The picture carries a "Software: npbert plot" text
chunk: npbert overwrites a PNG it drew, never another file (npbert.plotting.save_png).
"""
from __future__ import annotations

import json
import os

from npbert import plotting
from npbert.errors import JSON_ERRORS, DataError, NpbertError
from npbert.outputs import check_outputs
from npbert.training.run_dir import METRICS_FILE

PICTURE_FILE = "metrics.png"
KINDS = ("baseline", "train", "eval", "final", "test")
NOT_SERIES = ("kind", "step", "epoch", "split")   # split: the file or split a test record scored
TRAINING_ONLY = ("lr", "grad_norm", "tokens_per_s")  # how training went, not how well the model does
# how each kind is drawn: the (noisy) training values as a thin line, evaluations as dots on a
# line, a final (whole held-out set) or test score as a star, a baseline as a dashed level across the panel
STYLES = dict(train=dict(linewidth=1, alpha=0.6), eval=dict(marker="o", linewidth=1.5, markersize=4),
              test=dict(marker="*", linestyle="none", markersize=12),
              final=dict(marker="*", linestyle="none", markersize=12), baseline=dict(linestyle="--", linewidth=1.5))


def plot_run(run_dir, out=None, log=print) -> str:
    """Read RUN_DIR/metrics.jsonl, print what it holds, draw it into `out` (default
    RUN_DIR/metrics.png); returns the path written."""
    path = metrics_path(run_dir)
    out = out or os.path.join(run_dir, PICTURE_FILE)
    check_outputs([plotting.png_output("--out", out)], inputs=[path])
    records, skipped = read_metrics(path)
    pretraining = is_pretraining(records)
    for line in summary(path, records, skipped, pretraining):
        log(line)
    plt = plotting.load_pyplot()
    if plt is None:
        raise NpbertError(plotting.MISSING_NOTE)
    fig = draw(plt, records, pretraining, title=f"{os.path.abspath(run_dir)} ({run_kind(pretraining)})")
    plotting.save_png(plt, fig, out)
    where = " (inside the run directory)" if os.path.dirname(os.path.abspath(out)) == os.path.abspath(run_dir) else ""
    against = "against the baselines" if series(records, "baseline") else "(no baseline in the log)"
    log(f"drew loss, {scores_title(records, pretraining)} {against}, learning rate and tokens/s "
        f"into {out}{where}")
    return out


# --- reading ---------------------------------------------------------------------------------------

def metrics_path(run_dir) -> str:
    if not os.path.isdir(run_dir):
        what = "is not a directory" if os.path.exists(run_dir) else "does not exist"
        raise NpbertError(f"{run_dir} {what}: give the run directory of `npbert pretrain` or `npbert finetune` (--out)")
    path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.isfile(path):
        raise DataError(f"{run_dir} has no {METRICS_FILE}: not a run directory of `npbert pretrain` or "
                        "`npbert finetune`, or a run that has not started training")
    return path


def read_metrics(path) -> tuple[list, bool]:
    """-> (records, skipped): every line checked (a JSON object, a known kind, an integer step,
    numbers for the rest), the first bad one an error naming the line. An unterminated last line
    that does not parse is a record being written right now, or one a kill cut short (a resumed
    run drops it too): skipped, and said."""
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8", errors="replace").splitlines(keepends=True)
    records, skipped = [], False
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except JSON_ERRORS as e:
            if number == len(lines) and not line.endswith("\n"):
                skipped = True
                continue
            raise DataError(f"{path} line {number}: not a JSON record ({e})") from None
        records.append(check_record(record, path, number))
    if not records:
        raise DataError(f"{path} holds no record: the run has not logged a step yet (it logs every --log-every "
                        "steps)")
    return records, skipped


def check_record(record, path, number) -> dict:
    where = f"{path} line {number}"
    if not isinstance(record, dict):
        raise DataError(f"{where}: a {type(record).__name__}, not a JSON object")
    if record.get("kind") not in KINDS:
        raise DataError(f"{where}: kind {record.get('kind')!r} is not one of {', '.join(KINDS)}: is this the "
                        "metrics.jsonl of a training run?")
    if not is_number(record.get("step")) or not float(record["step"]).is_integer():
        raise DataError(f"{where}: step {record.get('step')!r} is not a whole number")
    for field, value in record.items():
        if field not in ("kind", "split") and not is_number(value):
            raise DataError(f"{where}: {field} is {value!r}, not a number")
    return record


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_pretraining(records) -> bool:
    return any(field.startswith(("mlm_", "nsp_")) for r in records for field in r)


def scores_title(records, pretraining) -> str:
    """What the accuracy panel holds (a run pretrained with --no-nsp logs no NSP figure)."""
    if not pretraining:
        return "dev metrics"
    return "MLM and NSP accuracy" if any(field.startswith("nsp_") for r in records for field in r) else "MLM accuracy"


def run_kind(pretraining) -> str:
    return "pretraining" if pretraining else "fine-tuning"


# --- what the panels hold --------------------------------------------------------------------------

def series(records, kind) -> dict:
    """{field: (steps, values)} of one kind of record, in the log's order."""
    found = {}
    for r in records:
        if r["kind"] == kind:
            for field, value in r.items():
                if field not in NOT_SERIES:
                    steps, values = found.setdefault(field, ([], []))
                    steps.append(r["step"])
                    values.append(value)
    return found


def is_loss(field) -> bool:
    return field.endswith("loss")


def is_score(field) -> bool:
    """Accuracy, F1, correlations...: what the baselines are for."""
    return not is_loss(field) and field not in TRAINING_ONLY


def kind_names(pretraining) -> dict:
    return dict(baseline="baseline", train="train", eval="held-out" if pretraining else "dev",
                final="final held-out (all pairs)", test="test")


def summary(path, records, skipped, pretraining) -> list:
    """What the log holds: per kind, its points and every field's last value."""
    steps = [r["step"] for r in records if r["kind"] != "baseline"]
    lines = [f"{path}: a {run_kind(pretraining)} run, {len(records)} record"
             + ("s" if len(records) > 1 else "")
             + (f", steps {min(steps)}-{max(steps)}" if steps else "")
             + ("; an unfinished last line skipped" if skipped else "")]
    for kind, name in kind_names(pretraining).items():
        found = series(records, kind)
        if found:
            points = max(len(steps) for steps, _ in found.values())
            count = "" if kind == "baseline" else f"{points:>4} point{'s' if points > 1 else ''}"
            last = ", ".join(f"{field} {number(values[-1])}" for field, (_, values) in found.items())
            lines.append(f"  {name:<9}{count:<11}  {last}")
    return lines


def number(value) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


# --- drawing ---------------------------------------------------------------------------------------

def draw(plt, records, pretraining, title):
    """The figure (2 x 2 panels) of the records."""
    fig, ((loss_ax, score_ax), (lr_ax, speed_ax)) = plt.subplots(2, 2, figsize=(12, 8), constrained_layout=True)
    fig.suptitle(title, fontsize=10)
    names = kind_names(pretraining)
    scores = scores_title(records, pretraining)
    draw_panel(loss_ax, records, names, is_loss, "loss", "loss")
    draw_panel(score_ax, records, names, is_score, scores + (" against the baselines" if series(records, "baseline")
                                                             else ""), "fraction")
    draw_panel(lr_ax, records, names, lambda f: f == "lr", "learning rate", "lr")
    lr_ax.set_xlabel(f"step ({logged_every(records)})" if logged_every(records) else "step")
    draw_panel(speed_ax, records, names, lambda f: f == "tokens_per_s", "training speed", "tokens/s")
    return fig


def logged_every(records) -> str:
    """How often the training figures (the learning rate among them) were logged: the line of a
    warmup starts at the first log, not at step 0 (where warmup's rate is 0), so say where."""
    steps = sorted({r["step"] for r in records if r["kind"] == "train"})
    if len(steps) < 2:
        return ""
    return f"logged every {min(b - a for a, b in zip(steps, steps[1:]))} steps, from step {steps[0]}"


def draw_baselines(ax, records, names, belongs, colours) -> None:
    """A dashed level per baseline; baselines at the same value (a tagger's precision, recall and
    F1 all 0) are one line with one label, not lines drawn over each other."""
    levels = {}
    for field, (_, values) in series(records, "baseline").items():
        if belongs(field):
            levels.setdefault(values[-1], []).append(field)
    for value, fields in levels.items():
        colour = colours.setdefault(fields[0], f"C{len(colours)}") if len(fields) == 1 else "grey"
        ax.axhline(value, color=colour, label=f"{names['baseline']} {', '.join(fields)}"
                   + (f" (all {value:g})" if len(fields) > 1 else ""), **STYLES["baseline"])
        colours.update({f: colours.get(f, colour) for f in fields})


def draw_panel(ax, records, names, belongs, title, ylabel) -> None:
    colours = {}
    for kind in ("train", "eval", "final", "test"):
        for field, (steps, values) in series(records, kind).items():
            if belongs(field):                         # a lone point needs a marker to be seen
                style = STYLES[kind] if len(steps) > 1 else {"marker": "o", **STYLES[kind]}
                ax.plot(steps, values, color=colours.setdefault(field, f"C{len(colours)}"),
                        label=f"{names[kind]} {field}", **style)
    draw_baselines(ax, records, names, belongs, colours)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if colours:                                        # below the panel: never over a curve
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3)
    else:
        ax.text(0.5, 0.5, "not in the log", ha="center", va="center", transform=ax.transAxes, color="grey")
