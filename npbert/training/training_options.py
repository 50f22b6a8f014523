"""A training run's options: those pretraining and fine-tuning share, declared once
(npbert/option_declaration.py: the dataclass fields, argparse lines, range checks and README's
table come from these), and which options a resumed run may change.

A run resumes with the options it was started with
(saved in its checkpoint); an option given again on --resume must either be one that does not
change what the run computes (how often it logs, evaluates, saves; where it stops) or have its
saved value. Anything else is refused: silently ignoring --steps 60 would train 40 steps, and
honouring it would change the learning-rate schedule from step 0, so the resumed run would no
longer be the run that was stopped (use `pretrain --model` to go on past a run's schedule)."""
from __future__ import annotations

import dataclasses

from npbert.errors import NpbertError
from npbert.option_declaration import COUNT, POSITIVE, PROBABILITY, Interval, Option, flag


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


def _show(value) -> str:
    return "(not set)" if value is None else str(value)


# The optimizer's numbers, bounded where a larger value can only diverge (docs/pretraining.md,
# "Options"): AdamW moves every weight by about lr per step, and the weights start near 0.02, so
# a learning rate above 1 destroys the model in one step; a weight decay above 1 shrinks the
# weights by more than the step itself. The gradient norm's bound only needs to be a number.
def optimizer_options(learning_rate, learning_rate_help="") -> tuple:
    """learning_rate_help: what a default of None means."""
    return (
        Option("batch_size", 32, "sequences per step", POSITIVE),
        Option("learning_rate", learning_rate, "peak learning rate" + learning_rate_help, Interval(0, 1)),
        Option("weight_decay", 0.01, "AdamW weight decay (not on LayerNorm weights or biases)", Interval(0, 1)),
        Option("max_grad_norm", 1.0, "clip the gradients to this global norm", Interval(0, 1e6)),
    )


def dropout_options(default, default_help="") -> tuple:
    """The model's two dropout rates (default_help: what None means, for a default of None)."""
    return (
        Option("hidden_dropout_prob", default, "dropout on the embeddings' and every sublayer's output" + default_help,
               PROBABILITY),
        Option("attention_probs_dropout_prob", default, "dropout on the attention probabilities" + default_help,
               PROBABILITY),
    )


def run_options(log_every: int, save_every_help: str) -> tuple:
    """The run controls that are options of the run (--resume, --overwrite and --backend are the
    command's: npbert/commands/training_args.py)."""
    return (
        Option("save_every", 200, save_every_help, COUNT),
        Option("seed", 0, "seed of the initialisation, batch order and dropout", COUNT),
        Option("log_every", log_every, "print and log the training loss every N steps", POSITIVE),
        Option("stop_after", None, "save and stop once the run reaches step STEP, counted from the run's start (on "
                                   "--resume too: --stop-after 30 on a run at step 20 trains 10 steps) (default: run "
                                   "to the end)", POSITIVE, metavar="STEP"),
    )
