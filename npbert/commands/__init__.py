"""Sub-commands of the `npbert` CLI; see npbert/cli.py."""


def add_backend_argument(p, help="hot-op backend (default numpy)"):
    """--backend for a command that runs the model; npbert.cli.main applies it before the command."""
    p.add_argument("--backend", choices=("numpy", "numba"), default=None, help=help)
