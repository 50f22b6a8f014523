"""What every demo shares: run against this checkout's npbert, a command line with --step (its
defaults in a notebook), stages that pause under --step, and each check printed as it passes.

Each demo is also a notebook: its `# %%` lines start cells (the "percent" format that Jupyter with
jupytext and VS Code open as a notebook); demos/README.md, "As notebooks"."""
import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # use this checkout's npbert

import numpy as np  # noqa: E402

np.set_printoptions(precision=4, suppress=True, linewidth=120)

PROMPT = "   -- Enter: next stage --"
_step = False                    # --step given: pause between stages
_stages = 0                      # stages begun so far


def arguments(doc, add=None) -> argparse.Namespace:
    """The demo's command line: --step (pause after each stage until Enter), and whatever
    add(parser) adds. -h prints the demo's docstring."""
    global _step
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step", action="store_true",
                        help="pause after each stage until Enter (default: run straight through)")
    if add is not None:
        add(parser)
    args = parser.parse_args([] if in_notebook() else None)
    _step = args.step
    return args


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


def exit_with(error):
    """Bad input to a demo: one line `NAME: error: ...` on stderr and exit code 2, as npbert's commands."""
    print(f"{os.path.basename(sys.argv[0])}: error: {error}", file=sys.stderr)
    sys.exit(2)


def ok(condition, what):
    """Assert a property of the layer and say so: a demo that finishes has checked itself."""
    assert condition, what
    print(f"   ok  {what}")
