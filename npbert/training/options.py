"""A training run's options: the numbers checked before anything is read or written, and which
options a resumed run may change.

A run resumes with the options it was started with
(saved in its checkpoint); an option given again on --resume must either be one that does not
change what the run computes (how often it logs, evaluates, saves; where it stops) or have its
saved value. Anything else is refused: silently ignoring --steps 60 would train 40 steps, and
honouring it would change the learning-rate schedule from step 0, so the resumed run would no
longer be the run that was stopped (use `pretrain --model` to go on past a run's schedule)."""
from __future__ import annotations

import dataclasses
import math

from npbert.errors import NpbertError


def given_options(opts) -> set:
    """The fields of an options dataclass that differ from its defaults: what a caller of the
    Python API asked for (the CLI knows exactly which flags were typed and passes those)."""
    defaults = type(opts)()
    return {f.name for f in dataclasses.fields(opts) if getattr(opts, f.name) != getattr(defaults, f.name)}


def resumed_options(opts, saved: dict, given, changeable, where):
    """The saved options, with the `changeable` ones among `given` taken from opts; any other
    given option must equal its saved value."""
    fields = {f.name for f in dataclasses.fields(opts)}
    options = {k: v for k, v in saved.items() if k in fields}
    for name in sorted(set(given) & fields):
        new = getattr(opts, name)
        if name in changeable:
            options[name] = new
        elif new != saved.get(name):
            raise NpbertError(f"{flag(name)} {_show(new)} cannot change when resuming: the run in {where} was "
                              f"started with {flag(name)} {_show(saved.get(name))}, and a resumed run continues "
                              f"exactly as it was started (only {', '.join(map(flag, sorted(changeable)))} may "
                              "change)")
    return type(opts)(**options)


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _show(value) -> str:
    return "(not set)" if value is None else str(value)


def check_numbers(opts, positive=(), counts=(), non_negative=(), fractions=()) -> None:
    """NpbertError naming the option unless each of `positive` is an integer >= 1, each of
    `counts` an integer >= 0 (a count, a step, a seed), each of `non_negative` a number >= 0, and
    each of `fractions` in [0, 1); None means "default"."""
    for name in positive + counts + non_negative + fractions:
        value = getattr(opts, name)
        if value is None:
            continue
        if name in positive + counts:
            low = 1 if name in positive else 0
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
            want = "a positive integer" if low else "an integer >= 0"
        elif name in non_negative:
            ok, want = _is_number(value) and value >= 0, "a finite number >= 0"
        else:
            ok, want = _is_number(value) and 0.0 <= value < 1.0, "in [0, 1)"
        if not ok:
            raise NpbertError(f"{flag(name)} must be {want}, got {value!r}")


# The optimizer's numbers, bounded where a larger value can only diverge (docs/pretraining.md,
# "Options"): AdamW moves every weight by about lr per step, and the weights start near 0.02, so
# a learning rate above 1 destroys the model in one step; a weight decay above 1 shrinks the
# weights by more than the step itself. The gradient norm's bound only needs to be a number.
OPTIMIZER_BOUNDS = dict(learning_rate=1.0, weight_decay=1.0, max_grad_norm=1e6)


def check_optimizer(opts) -> None:
    """NpbertError naming the first optimizer option that is not a finite number in [0, bound]."""
    for name, bound in OPTIMIZER_BOUNDS.items():
        value = getattr(opts, name)
        if not (_is_number(value) and 0 <= value <= bound):
            raise NpbertError(f"{flag(name)} must be a number from 0 to {bound:g}, got {value!r}")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
