"""The argparse types of every count, size, seed and number option: each refuses a value out of
its range while the command line is parsed, before anything is read or written, and says the
range, which the help text shows too (commands.HelpFormatter reads `.range`).

    p.add_argument("--batch-size", type=positive_int, ...)           # 1, 2, ...
    p.add_argument("--seed", type=seed, ...)                         # 0, 1, ...
    p.add_argument("--dropout", type=finite_float(0, 1, high_open=True), ...)   # [0, 1)

A negative --batch-size used to print nan for every line and --max-examples 0 an accuracy of
0.0000 over no examples, exit 0: a value outside the range is not a result, it is a typo."""
from __future__ import annotations

import argparse
import math


def at_least(low: int, name: str):
    """An argparse type: an integer >= low."""
    range_text = f"an integer >= {low}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {range_text}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {range_text}, got {value}")
        return value
    parse.__name__, parse.range = name, range_text
    return parse


positive_int = at_least(1, "positive_int")
non_negative_int = at_least(0, "non_negative_int")
seed = at_least(0, "seed")                             # numpy's SeedSequence refuses a negative one


def _interval_text(low, high, low_open, high_open) -> str:
    if math.isfinite(low) and math.isfinite(high):
        return f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if math.isfinite(low):
        return f"a finite number {'>' if low_open else '>='} {low:g}"
    if math.isfinite(high):
        return f"a finite number {'<' if high_open else '<='} {high:g}"
    return "a finite number"


def finite_float(low: float, high: float, *, low_open: bool = False, high_open: bool = False):
    """An argparse type: a finite float in the interval from low to high (inf: no bound on that
    side), each end closed unless said open; NaN and +-inf are never in range."""
    range_text = _interval_text(low, high, low_open, high_open)

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {range_text}, got {text!r}") from None
        inside = (math.isfinite(value) and (value > low if low_open else value >= low)
                  and (value < high if high_open else value <= high))
        if not inside:
            raise argparse.ArgumentTypeError(f"must be {range_text}, got {text}")
        return value
    parse.__name__, parse.range = "finite_float", range_text
    return parse


probability = finite_float(0.0, 1.0, high_open=True)     # a dropout or masking rate: 1 would drop everything


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
