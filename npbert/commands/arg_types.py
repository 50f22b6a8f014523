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

def integer_type(low: int, high: int | None, range_text: str, name: str):
    """An argparse type: an integer in [low, high] (high None: no upper bound)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {range_text}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {range_text}, got {value}")
        return value
    parse.__name__, parse.range = name, range_text
    return parse


positive_int = integer_type(1, None, "an integer >= 1", "positive_int")
non_negative_int = integer_type(0, None, "an integer >= 0", "non_negative_int")
seed = integer_type(0, None, "an integer >= 0", "seed")       # numpy's SeedSequence refuses a negative one


def finite_float(low: float, high: float, *, low_open: bool = False, high_open: bool = False):
    """An argparse type: a finite float in the interval from low to high (inf: no bound on that
    side), each end closed unless said open; NaN and +-inf are never in range."""
    range_text = (f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
                  if math.isfinite(low) and math.isfinite(high) else
                  f"a finite number {'>' if low_open else '>='} {low:g}" if math.isfinite(low) else
                  f"a finite number {'<' if high_open else '<='} {high:g}")

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
