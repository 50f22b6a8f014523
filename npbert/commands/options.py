"""Declared options (npbert/options.py) as argparse arguments: one add_argument per declaration,
its range the argument's type (refused while the command line is parsed, and shown in --help by
commands.HelpFormatter)."""
from npbert.commands.arg_types import of_range
from npbert.options import declarations


def add_options(p, record) -> None:
    """An argument for each option of record (an options_record) the command line takes."""
    for o in declarations(record):
        if not o.command_line:
            continue
        kwargs = dict(dest=o.name, default=o.default, help=o.help)
        if o.action is not None:
            kwargs["action"] = o.action
        if o.range is not None:
            kwargs["type"] = of_range(o.range, type(o.range).__name__.lower())
        if o.choices is not None:
            kwargs["choices"] = list(o.choices)
        if o.metavar is not None:
            kwargs["metavar"] = o.metavar
        p.add_argument(o.option_string, **kwargs)
        if o.opposite is not None:                     # e.g. --nsp beside --no-nsp, both setting no_nsp
            other = "store_false" if o.action == "store_true" else "store_true"
            p.add_argument(o.opposite, dest=o.name, default=o.default, action=other,
                           help=f"the opposite of {o.option_string}")
