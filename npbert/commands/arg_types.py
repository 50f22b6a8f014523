"""The argparse types of every count, size, seed and number option: each refuses a value out of
its range while the command line is parsed, before anything is read or written, and says the
range, which the help text shows too (commands.HelpFormatter reads `.range`). The ranges are
npbert/option_declaration.py's (Integer, Interval); a declared option gets its type from its
range (of_range, called by commands/option_arguments.py).

    p.add_argument("--batch-size", type=positive_int, ...)           # 1, 2, ...
    p.add_argument("--seed", type=seed, ...)                         # 0, 1, ...
    p.add_argument("--dropout", type=finite_float(0, 1, high_open=True), ...)   # [0, 1)

A negative --batch-size used to print nan for every line and --max-examples 0 an accuracy of
0.0000 over no examples, exit 0: a value outside the range is not a result, it is a typo."""
from __future__ import annotations

import argparse

from npbert.option_declaration import PROBABILITY, Integer, Interval


def of_range(rng, name: str):
    """The argparse type of a range (npbert/option_declaration.py): its value, or an error
    saying the range."""
    def parse(text: str):
        try:
            value = rng.parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {rng.text}, got {text!r}") from None
        if not rng.holds(value):
            raise argparse.ArgumentTypeError(f"must be {rng.text}, got {text}")
        return value
    parse.__name__, parse.range = name, rng.text
    return parse


def at_least(low: int, name: str):
    """An argparse type: an integer >= low."""
    return of_range(Integer(low), name)


positive_int = at_least(1, "positive_int")
non_negative_int = at_least(0, "non_negative_int")
seed = at_least(0, "seed")                             # numpy's SeedSequence refuses a negative one


def finite_float(low: float, high: float, *, low_open: bool = False, high_open: bool = False):
    """An argparse type: a finite float in the interval from low to high (inf: no bound on that
    side), each end closed unless said open; NaN and +-inf are never in range."""
    return of_range(Interval(low, high, low_open, high_open), "finite_float")


probability = of_range(PROBABILITY, "finite_float")     # a dropout or masking rate: 1 would drop everything


def comma_list(item):
    """An argparse type: a comma-separated list, each part one of `item` (a tuple of choices) or
    parsed by `item` (an argparse type), none empty."""
    range_text = (f"comma-separated, each one of {', '.join(item)}" if isinstance(item, tuple) else
                  f"comma-separated, each {item.range}")

    def parse(text: str) -> list:
        parts = text.split(",")
        for part in parts:
            if isinstance(item, tuple) and part not in item:
                raise argparse.ArgumentTypeError(f"{part!r} is not one of {', '.join(item)}")
        return parts if isinstance(item, tuple) else [item(part) for part in parts]
    parse.__name__, parse.range = "comma_list", range_text
    return parse
