"""Declared options (npbert/option_declaration.py) as argparse arguments: one add_argument per
declaration, its range the argument's type (refused while the command line is parsed, and shown
in --help by commands.HelpFormatter), each noting in args.typed that it was typed."""
import argparse

from npbert.commands.arg_types import of_range
from npbert.option_declaration import declarations


class Typed(argparse.Action):
    """argparse's store (with nargs=0, store_const: a flag) that also adds the destination to
    namespace.typed: argparse cannot tell a typed value from a default, and a resumed run refuses
    a typed option that would change it, even one typed with its default value."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        namespace.typed = getattr(namespace, "typed", set()) | {self.dest}


def add_options(p, record) -> None:
    """An argument for each option of record (an options_record) the command line takes."""
    for o in declarations(record):
        if not o.command_line:
            continue
        kwargs = dict(dest=o.name, default=o.default, help=o.help, action=Typed)
        if o.action is not None:                       # store_true or store_false: a flag
            kwargs.update(nargs=0, const=o.action == "store_true")
        if o.range is not None:
            kwargs["type"] = of_range(o.range, type(o.range).__name__.lower())
        if o.choices is not None:
            kwargs["choices"] = list(o.choices)
        if o.metavar is not None:
            kwargs["metavar"] = o.metavar
        p.add_argument(o.option_string, **kwargs)
        if o.opposite is not None:                     # e.g. --nsp beside --no-nsp, both setting no_nsp
            p.add_argument(o.opposite, dest=o.name, default=o.default, action=Typed, nargs=0,
                           const=o.action != "store_true", help=f"the opposite of {o.option_string}")
