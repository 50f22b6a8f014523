"""An option declared once: its name, default, help and range (or choices); everything else
about it is made from that one declaration.

    STEPS = Option("steps", 2000, "training steps (batches)", Integer(1))
    PretrainOptions = options_record("PretrainOptions", (STEPS, ...), __name__)

    PretrainOptions                  the dataclass a run takes: a field per option, carrying it
    check_ranges(opts)               each value in its range (the Python API; NpbertError)
    add_options(p, PretrainOptions)  the argparse lines, the range their type
                                     (commands/option_arguments.py)
    npbert/option_table.py           README's table of ranges, from the parsers

An option whose default is None takes None ("decided later": its help says by what)."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from npbert.errors import NpbertError


@dataclass(frozen=True)
class Integer:
    """An integer >= low."""
    low: int

    @property
    def text(self) -> str:
        return f"an integer >= {self.low}"

    def holds(self, value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= self.low

    def parse(self, text: str) -> int:
        return int(text)                               # ValueError for "1.5", ""


@dataclass(frozen=True)
class Interval:
    """A finite number from low to high (inf: no bound on that side), each end closed unless
    said open; NaN and +-inf are never in it."""
    low: float
    high: float
    low_open: bool = False
    high_open: bool = False

    @property
    def text(self) -> str:
        low, high = self.low, self.high
        if math.isfinite(low) and math.isfinite(high):
            return f"a number in {'(' if self.low_open else '['}{low:g}, {high:g}{')' if self.high_open else ']'}"
        if math.isfinite(low):
            return f"a finite number {'>' if self.low_open else '>='} {low:g}"
        if math.isfinite(high):
            return f"a finite number {'<' if self.high_open else '<='} {high:g}"
        return "a finite number"

    def holds(self, value) -> bool:
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)):
            return False
        return ((value > self.low if self.low_open else value >= self.low)
                and (value < self.high if self.high_open else value <= self.high))

    def parse(self, text: str) -> float:
        return float(text)


POSITIVE, COUNT = Integer(1), Integer(0)                 # a size; a count, step or seed (0 allowed)
PROBABILITY = Interval(0.0, 1.0, high_open=True)         # a dropout or sampling rate: 1 would drop everything


@dataclass(frozen=True)
class Option:
    """One option of a command and the field of its options record. flag: "--" + name with dashes
    unless given (--cased sets do_lower_case); action: argparse's, for an on/off flag."""
    name: str
    default: object
    help: str
    range: Integer | Interval | None = None
    choices: tuple | dict | None = None                # a dict: its keys, as they are when checked
    flag: str | None = None
    action: str | None = None                          # "store_true" / "store_false": a flag without a value
    opposite: str | None = None                        # with action: a second flag setting the other value
    metavar: str | None = None
    command_line: bool = True                          # False: a field of the Python API only

    @property
    def option_string(self) -> str:
        return self.flag or flag(self.name)


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def options_record(name: str, options, module: str, methods=None):
    """The dataclass of these options: one field per option, in order, with its default and the
    declaration itself (declarations() gives them back)."""
    fields = [(o.name, object, dataclasses.field(default=o.default, metadata={"option": o})) for o in options]
    record = dataclasses.make_dataclass(name, fields, namespace=methods or {})
    record.__module__ = module                           # where it is declared (pickle, repr, docs)
    record.__doc__ = f"The options of {module}, one field per declaration (npbert/option_declaration.py)."
    return record


def declarations(record) -> tuple:
    """The Options an options_record (class or instance) was made of, in order."""
    return tuple(f.metadata["option"] for f in dataclasses.fields(record))


def check_ranges(opts) -> None:
    """NpbertError naming the first option whose value is out of its range or not one of its
    choices; None passes only where it is the default."""
    for o in declarations(opts):
        value = getattr(opts, o.name)
        if value is None and o.default is None:
            continue
        if o.range is not None and not o.range.holds(value):
            raise NpbertError(f"{o.option_string} must be {o.range.text}, got {value!r}")
        if o.choices is not None and value not in o.choices:
            raise NpbertError(f"{o.option_string} {value!r} is not one of {', '.join(map(str, o.choices))}")
