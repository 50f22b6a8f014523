"""Pictures are optional: matplotlib is the `npbert[plot]` extra, never a dependency. Whatever
draws asks `load_pyplot()` first and, given None, prints MISSING_NOTE and keeps its text output;
the drawing functions below take the pyplot it returned and return a figure for save_png (or, in a
notebook, to show inline).

Every PNG npbert writes goes through save_png: written atomically, marked with a "Software: npbert"
text chunk, and only over a file npbert drew (png_output, checked with npbert/outputs.py's rule for
every file a command writes before any work is done; check_png_path for a picture alone).
"""
from __future__ import annotations

import os

import numpy as np

from npbert.atomic import atomic_write
from npbert.errors import NpbertError
from npbert.outputs import Output, check_outputs

SOFTWARE = "npbert"                                    # the PNG's tEXt "Software" value ("npbert plot" before)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MISSING_NOTE = "matplotlib is not installed (pip install 'npbert[plot]'): no pictures, text output only"


def load_pyplot():
    """matplotlib.pyplot on the file-only Agg backend (no screen needed), or None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    except ValueError:                                 # matplotlib's import reads MPLBACKEND and checks it
        raise NpbertError(f"MPLBACKEND={os.environ.get('MPLBACKEND')!r} is not a backend matplotlib knows; npbert "
                          "draws its PNG files on matplotlib's Agg whatever it says: unset it (or name a backend, "
                          "e.g. MPLBACKEND=Agg)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def png_output(option, path) -> Output:
    """The picture an option names (None: not asked for), for outputs.check_outputs: a FILE.png,
    replaced only if npbert drew it."""
    if path and not path.lower().endswith(".png"):
        raise NpbertError(f"{path}: the picture is a PNG; give a FILE.png")
    if path:
        load_pyplot()                                  # a bogus MPLBACKEND is refused now, not after the work
    return Output(option, path, drawn_head, made="drawn")


def check_png_path(path, option="--plot") -> None:
    """Refuse, before anything is computed or drawn, a path a PNG cannot go to or must not replace."""
    check_outputs([png_output(option, path)])


def drawn_by_npbert(path) -> bool:
    """A PNG whose text chunk says npbert made it."""
    with open(path, "rb") as f:
        return drawn_head(f.read(4096))


def drawn_head(head: bytes) -> bool:
    """The start of a PNG npbert drew: matplotlib writes the Software text chunk right after the header."""
    return head.startswith(PNG_SIGNATURE) and b"tEXtSoftware\x00" + SOFTWARE.encode() in head[:4096]


def save_png(plt, fig, path) -> None:
    """Write the figure to path (checked with check_png_path first) in one step, marked as npbert's."""
    try:
        atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100, metadata={"Software": SOFTWARE}))
    except OSError as e:                               # a read-only or full disk: one line naming the picture
        raise NpbertError(f"could not write {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)


def attention_heads(plt, probs, query_labels, key_labels, title=""):
    """A figure of a layer's attention probabilities, a heat map per head in a grid: probs (A, Tq, Tk),
    queries down, keys across, each row summing to 1 (the colour scale is 0 to 1 in every panel)."""
    num_heads = probs.shape[0]
    cols = min(num_heads, 4)
    rows = -(-num_heads // cols)                                       # ceil
    inches = 1.0 + 0.25 * max(len(key_labels), 6)                      # per panel: room for the labels
    fig, axes = plt.subplots(rows, cols, figsize=(cols * inches, rows * inches), squeeze=False,
                             layout="constrained")                     # room for every label
    for head, ax in enumerate(axes.flat):
        if head >= num_heads:
            ax.axis("off")
            continue
        image = ax.imshow(probs[head], vmin=0.0, vmax=1.0, cmap="viridis")
        ax.set_title(f"head {head}")
        ax.set_xticks(range(len(key_labels)), key_labels, rotation=90, fontsize=7)
        ax.set_yticks(range(len(query_labels)), query_labels, fontsize=7)
        ax.set_xlabel("key (attended to)", fontsize=8)
        ax.set_ylabel("query (attending)", fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.6, label="probability (query attends to key)")
    fig.suptitle(title)
    return fig


def head_statistics(plt, means, names, title=""):
    """A figure of per-head averages, a layers x heads heat map per statistic: means (L, A, S), names
    the S statistics' titles (an attention share on 0..1, or an entropy in nats on its own scale),
    each cell written in."""
    L, A, S = means.shape
    cols = min(S, 4)
    rows = -(-S // cols)                                                # ceil
    fig, axes = plt.subplots(rows, cols, figsize=(cols * (1.2 + 0.45 * A), rows * (1.0 + 0.45 * L)),
                             squeeze=False, layout="constrained")
    for k, ax in enumerate(axes.flat):
        if k >= S:
            ax.axis("off")
            continue
        share = names[k] != "entropy"
        image = ax.imshow(means[:, :, k], vmin=0.0, vmax=1.0 if share else None, cmap="viridis", aspect="auto")
        bright = image.norm(means[:, :, k]) > 0.6                       # dark text on the light end of viridis
        for i in range(L):
            for a in range(A):
                ax.text(a, i, f"{means[i, a, k]:.2f}", ha="center", va="center", fontsize=6,
                        color="black" if bright[i, a] else "white")
        ax.set_title(names[k] if not share else f"to {names[k]}", fontsize=9)
        ax.set_xticks(range(A), [str(a) for a in range(A)], fontsize=7)
        ax.set_yticks(range(L), [str(i) for i in range(L)], fontsize=7)
        ax.set_xlabel("head", fontsize=8)
        ax.set_ylabel("layer", fontsize=8)
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.suptitle(title)
    return fig


def gradient_norms(plt, stages, series, title=""):
    """A figure of a backward's gradient norms: stages (labels, in the order the backward reaches
    them) across, one line per series {name: norms}, on a log scale (a norm of exactly 0 is not drawn)."""
    fig, ax = plt.subplots(figsize=(max(6.0, 0.8 * len(stages)), 4.0))
    for name, norms in series.items():
        norms = np.asarray(norms, dtype=np.float64)
        ax.plot(range(len(stages)), np.where(norms > 0, norms, np.nan), marker="o", label=name)
    ax.set_xticks(range(len(stages)), stages, rotation=30, ha="right")
    ax.set_yscale("log")
    log_ticks(ax, np.concatenate([np.asarray(norms, dtype=np.float64) for norms in series.values()]))
    ax.set_ylabel("gradient norm (log scale; 0 not drawn)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    return fig


def log_ticks(ax, values) -> None:
    """Labelled y ticks on a log axis, enough to read a value off: every 1..9 x 10^k over a range
    of less than ~1.5 decades, 1, 2, 5 x 10^k up to 4, the powers of 10 beyond (matplotlib's
    default labels only powers of 10, which a range inside one decade may not even contain)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter    # plt came from matplotlib
    positive = values[values > 0]
    decades = np.log10(positive.max() / positive.min()) if positive.size else 0.0
    subs = np.arange(1.0, 10.0) if decades < 1.5 else (1.0, 2.0, 5.0) if decades < 4 else (1.0,)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs, numticks=100))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:.3g}"))
    ax.yaxis.set_minor_locator(LogLocator(base=10, subs=np.arange(1.0, 10.0), numticks=100))
    ax.yaxis.set_minor_formatter(NullFormatter())
