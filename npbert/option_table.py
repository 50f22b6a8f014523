"""README's table of option ranges, made from the commands' parsers (and so from the options'
declarations: npbert/option_declaration.py): `python -m npbert.option_table` prints it, and
tests/commands/test_option_declaration.py checks README holds exactly this. A flag that is not the same number in
every command that has it is listed with the commands where it is this one."""
import argparse
from collections import defaultdict

from npbert.cli import build_parser


def option_ranges(parser) -> dict:
    """{(flag, range text or None): [command, ...]} of every command's options (a list of names,
    comma_list, has no number range)."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    found = defaultdict(list)
    for command, sub in commands.items():
        for action in sub._actions:
            rng = getattr(action.type, "range", None)
            if action.option_strings:
                found[action.option_strings[0], rng if getattr(action.type, "__name__", "") != "comma_list" else None
                      ].append(command)
    return found


def option_table(parser) -> str:
    """A markdown table: each range, and the options that take it."""
    found = option_ranges(parser)
    ranges = defaultdict(list)                          # range text -> ["`--flag`" or "`--flag` (command, ...)"]
    for (flag, rng), commands in sorted(found.items(), key=str):
        if rng is None:
            continue
        alone = all(r == rng for f, r in found if f == flag)
        ranges[rng].append(f"`{flag}`" if alone else f"`{flag}` ({', '.join(commands)})")
    rows = [f"| {rng} | {', '.join(options)} |" for rng, options in sorted(ranges.items())]
    return "\n".join(["| range | options |", "|---|---|", *rows]) + "\n"


if __name__ == "__main__":
    print(option_table(build_parser()), end="")
