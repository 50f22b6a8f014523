"""What every demo shares: run against this checkout's npbert, a command line with --step (its
defaults in a notebook), stages that pause under --step, each check printed as it passes, and its
figure: drawn inline in a notebook, written to a file by the script with --plot.

Each demo is also a notebook: its `# %%` lines start cells (the "percent" format), and
`python demos/notebooks.py` builds the notebook with its derivation page's prose and math in
markdown cells; demos/README.md, "As notebooks"."""
import argparse
import io
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # use this checkout's npbert

import numpy as np  # noqa: E402

from npbert.errors import NpbertError  # noqa: E402
from npbert.plotting import MISSING_NOTE, check_png_path, load_pyplot, save_png  # noqa: E402

np.set_printoptions(precision=4, suppress=True, linewidth=120)

PROMPT = "   -- Enter: next stage --"
_step = False                    # --step given: pause between stages
_stages = 0                      # stages begun so far


def arguments(doc, add=None, picture=False) -> argparse.Namespace:
    """The demo's command line: --step (pause after each stage until Enter), --plot when the demo
    draws a `picture` (its file checked before any work: a PNG npbert did not draw is never
    replaced), and whatever add(parser) adds. -h prints the demo's docstring."""
    global _step
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step", action="store_true",
                        help="pause after each stage until Enter (default: run straight through)")
    if picture:
        parser.add_argument("--plot", action="store_true",
                            help=f"also write its figure to {picture_path()} (needs matplotlib)")
    if add is not None:
        add(parser)
    args = parser.parse_args([] if in_notebook() else None)
    _step = args.step
    if getattr(args, "plot", False):
        try:
            check_png_path(picture_path())
        except NpbertError as e:
            exit_with(e)
    return args


def picture_path() -> str:
    """Where the script writes its figure: NN_name.png in the current directory."""
    return Path(sys.argv[0]).stem + ".png"


def pyplot(args):
    """matplotlib.pyplot when this run draws its figure: always in a notebook (inline), as a script
    with --plot (to a file); else None. Without matplotlib None too, and a note says so."""
    if not (in_notebook() or getattr(args, "plot", False)):
        return None
    plt = load_pyplot()
    if plt is None:
        print(f"   {MISSING_NOTE}")
    return plt


def show(plt, fig, path=None):
    """The figure inline in a notebook (a PNG output of the cell); as a script, written to path
    (default picture_path()) and named."""
    if in_notebook():
        from IPython.display import Image, display
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        plt.close(fig)
        display(Image(buffer.getvalue()))
        return
    path = path or picture_path()
    save_png(plt, fig, path)
    print(f"   wrote {os.path.abspath(path)}")          # the current directory, which a reader may not expect


def in_notebook() -> bool:
    """Run as a notebook's cells (Jupyter, VS Code): sys.argv is then the kernel's own command line
    (`ipykernel_launcher.py -f kernel.json`), not the demo's, so the demo runs with its defaults (--step
    has nothing to wait for there: the cells are the stages)."""
    return "ipykernel" in sys.modules and os.path.basename(sys.argv[0]).startswith("ipykernel")


def stage(title):
    """Begin the next stage: under --step, first wait for Enter (at the end of input, go on), then
    print its number and title."""
    global _stages
    if _stages:
        if _step:
            print(PROMPT, end="", flush=True)
            sys.stdin.readline()             # "" at end of input: no more pauses to wait for
        print()
    _stages += 1
    print(f"{_stages}. {title}")


def one_line_errors(function, *args):
    """function(*args); as a script, bad input (an NpbertError) ends the demo with one line and exit
    code 2, as npbert's commands do; in a notebook the cell shows the error."""
    try:
        return function(*args)
    except NpbertError as e:
        if in_notebook():
            raise
        exit_with(e)


def exit_with(error):
    """Bad input to a demo: one line `NAME: error: ...` on stderr and exit code 2, as npbert's commands."""
    print(f"{os.path.basename(sys.argv[0])}: error: {error}", file=sys.stderr)
    sys.exit(2)


def ok(condition, what):
    """Assert a property of the layer and say so: a demo that finishes has checked itself."""
    assert condition, what
    print(f"   ok  {what}")
