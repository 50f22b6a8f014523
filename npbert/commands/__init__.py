"""Sub-commands of the `npbert` CLI; see npbert/cli.py."""
import argparse


class Parser(argparse.ArgumentParser):
    """argparse's parser with its errors on one line, `npbert COMMAND: error: ...`, exit 2, as
    every other bad input (argparse would print the whole usage above it)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its range when its type has one (commands/arg_types.py),
    then its default, "(default: 128)", unless the help already says what it is (an option whose
    default is None depends on something else: its help says on what). Flags (store_true) are
    off by default and say nothing."""

    def _get_help_string(self, action):
        help = action.help or ""
        if getattr(action.type, "range", None):       # the range first, then the default
            at = help.find(" (default") if "(default" in help else len(help)
            help = f"{help[:at]} ({action.type.range}){help[at:]}"
        if (action.option_strings and action.nargs != 0 and action.default not in (None, argparse.SUPPRESS)
                and "default" not in help):
            help += " (default: %(default)s)"
        return help


def add_backend_argument(p, help="hot-op backend (default: numpy, or NPBERT_BACKEND)", default=None):
    """--backend for a command that runs the model; npbert.cli.main applies it before the command."""
    p.add_argument("--backend", choices=("numpy", "numba"), default=default, help=help)


def training_backend() -> str:
    """Training commands run on the Numba kernels unless NPBERT_BACKEND says otherwise: faster
    per step at every preset (docs/performance.md), and the compiled kernels are cached on
    disk, so only the first run on a machine pays the ~10-20 s of compilation."""
    from npbert.environment import backend_from_environment
    return backend_from_environment() or "numba"


def check_checkpoint_task(directory, task) -> None:
    """Refuse a fine-tuned checkpoint whose head or labels do not fit task, from its config.json
    alone (before the weights are read): a classifier's logits decoded as tags are nonsense."""
    from npbert.checkpoint import load_config
    from npbert.tasks.checkpoint_fit import check_head_fits_task
    check_head_fits_task(load_config(directory), task, directory)
