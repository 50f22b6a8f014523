"""`npbert ...`: one sub-command per module in npbert/commands/, each with register(subparsers)."""
from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import warnings

# One BLAS thread unless the user chose otherwise, set before NumPy loads its BLAS. At the
# hidden sizes npbert trains on a laptop the matrices are small: a second BLAS thread gains
# little and, when the cores are busy, spins against the other work (a tiny-preset step ran
# 5x slower with 2 OpenBLAS threads on a loaded 2-core machine; see docs/performance.md).
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from npbert.commands import HelpFormatter, Parser  # noqa: E402  (after the thread settings, on purpose)
from npbert.environment import check_environment, threads_note  # noqa: E402
from npbert.errors import NpbertError  # noqa: E402
from npbert.signals import Terminated, terminated_as_interrupt  # noqa: E402

# Each name is a module npbert.commands.<name> defining register(subparsers); the parser it
# adds sets `func` (args -> exit code).
COMMANDS = ["info", "gradcheck", "pretrain", "fill-mask", "prepare", "finetune", "evaluate", "predict", "plot", "bench",
            "golden", "conform", "minimal-pairs", "attention-heads", "probe"]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="npbert", description="BERT in NumPy: pretrain, fine-tune, check.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"npbert.commands.{name.replace('-', '_')}").register(sub)
    for command in sub.choices.values():
        command.formatter_class = HelpFormatter          # every option's default shown the same way
    return parser


def main(argv=None) -> int:
    """Run one command -> exit code: 2 and one line for bad input, 130 and one line on Ctrl-C
    (training commands stop gracefully on their own; this is the fallback for every other moment).
    Warnings are held until the command ends and dropped after an error line: NumPy's "overflow
    encountered in ..." printed above the line that names the cause would only hide it."""
    held = []
    try:
        with warnings.catch_warnings(record=True) as held:
            code = _run(sys.argv[1:] if argv is None else argv)
    except BaseException:                             # a bug's traceback, or argparse's exit: warnings shown
        _show(held)
        raise
    if code != 2:
        _show(held)
    return code


def _run(argv) -> int:
    name = f"npbert {argv[0]}" if argv and argv[0] in COMMANDS else "npbert"
    try:
        check_environment()                           # before Numba loads: it reads NUMBA_NUM_THREADS then
        if threads_note():
            print(f"{name}: note: {threads_note()}", file=sys.stderr)
        args = build_parser().parse_args(argv)
        name = f"npbert {args.command}"
        if getattr(args, "backend", None):           # every command that runs the model has --backend
            from npbert.backend import set_backend
            set_backend(args.backend)
        with terminated_as_interrupt():
            code = int(args.func(args) or 0)
        sys.stdout.flush()                            # a full disk under `> FILE` is this command's error, not exit's
        return code
    except (NpbertError, FileNotFoundError) as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print(f"{name}: {'terminated' if isinstance(e, Terminated) else 'interrupted'}", file=sys.stderr)
        return 128 + e.signum if isinstance(e, Terminated) else 130
    except BrokenPipeError:                               # `npbert ... | head`: the reader has all it wants
        _drop_stdout()
        return 1
    except UnicodeEncodeError as e:                       # PYTHONIOENCODING=ascii and a non-ASCII token
        _drop_stdout()
        print(f"{name}: error: the output holds {e.object[e.start:e.end]!r}, which this terminal's or "
              f"PYTHONIOENCODING's encoding {e.encoding} cannot write: set PYTHONIOENCODING=utf-8", file=sys.stderr)
        return 2
    except OSError as e:                                  # a full or read-only disk, no permission, a file too large
        _drop_stdout()
        print(f"{name}: error: {os_error(e)}", file=sys.stderr)
        return 2


def os_error(e: OSError) -> str:
    """An OSError as a message: what failed, on which file (none named: stdout's, at its flush)."""
    what = e.strerror or str(e) or type(e).__name__
    if e.filename:
        return f"{e.filename}: {what}"
    if e.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return f"could not write the output: {what}"
    return what


def _drop_stdout() -> None:
    """Point stdout at /dev/null: the output already failed, and exit's flush must not fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):                     # stdout without a descriptor (captured by a caller)
        pass


def _show(held) -> None:
    for w in held:
        warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)


if __name__ == "__main__":
    sys.exit(main())
