"""What `npbert pretrain` and `npbert finetune` share on the command line: the optimizer
options, the run controls (seed, logging, stop, resume, overwrite, backend), which options
were typed (a resumed run refuses a typed option that would change it, even one typed with its
default value), and how a parsed command line becomes an options dataclass and a run."""
import argparse
import dataclasses
import functools
import importlib

from npbert.allocator import keep_freed_memory
from npbert.commands import add_backend_argument, training_backend
from npbert.commands.arg_types import finite_float, non_negative_int, positive_int, seed
from npbert.training.options import OPTIMIZER_BOUNDS
from npbert.training.progress import say
from npbert.training.run_dir import free_run_dir


def track_typed(p) -> None:
    """Make parser p note in args.typed the destination of every option the command line gives
    (call before adding the options). argparse has no public way to tell a typed value from a
    default: this registers subclasses of its store actions (private names, unchanged since
    Python 3.2) that also record their destination."""
    for name, base in (("store", argparse._StoreAction), (None, argparse._StoreAction),
                       ("store_true", argparse._StoreTrueAction), ("store_false", argparse._StoreFalseAction)):
        p.register("action", name, type(f"Typed{base.__name__}", (base,), {"__call__": _note_typed(base)}))


def _note_typed(base):
    def call(self, parser, namespace, values, option_string=None):
        base.__call__(self, parser, namespace, values, option_string)
        namespace.typed = getattr(namespace, "typed", set()) | {self.dest}
    return call


def add_optimizer_arguments(p, defaults):
    p.add_argument("--batch-size", type=positive_int, default=defaults.batch_size, help="sequences per step")
    p.add_argument("--learning-rate", type=finite_float(0, OPTIMIZER_BOUNDS["learning_rate"]), default=defaults.learning_rate, help="peak learning rate")
    p.add_argument("--weight-decay", type=finite_float(0, OPTIMIZER_BOUNDS["weight_decay"]), default=defaults.weight_decay,
                   help="AdamW weight decay (not on LayerNorm weights or biases)")
    p.add_argument("--max-grad-norm", type=finite_float(0, OPTIMIZER_BOUNDS["max_grad_norm"]), default=defaults.max_grad_norm,
                   help="clip the gradients to this global norm")


def add_run_arguments(p, defaults, save_every_help, train):
    """The run controls, and func: train ("module:function", imported when the command runs) on
    the options record of the same module named by its class's name in `train`'s module."""
    p.add_argument("--save-every", type=non_negative_int, default=defaults.save_every, help=save_every_help)
    p.add_argument("--seed", type=seed, default=defaults.seed,
                   help="seed of the initialisation, batch order and dropout")
    p.add_argument("--log-every", type=positive_int, default=defaults.log_every,
                   help="print and log the training loss every N steps")
    p.add_argument("--stop-after", type=positive_int, default=None, metavar="STEP",
                   help="save and stop once the run reaches step STEP, counted from the run's start (on --resume "
                        "too: --stop-after 30 on a run at step 20 trains 10 steps) (default: run to the end)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out exactly where it stopped")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the npbert run in --out with a new one; the old run is kept until the new one "
                        "has saved, and put back if it fails before")
    add_backend_argument(p, help="hot-op backend (default: numba, or NPBERT_BACKEND)", default=training_backend())
    p.set_defaults(func=functools.partial(run_training, train, type(defaults).__name__))


def run_training(train, options_name, args) -> int:
    """Build options_class from the arguments it names (None: keep its default) and run train
    (--backend was applied by npbert.cli.main); exit code 130 when the run stopped early on
    Ctrl-C, 143 on SIGTERM (its checkpoint is resumable either way). Without --out, a default run directory that already
    holds a run is left alone and the next free one (runs/pretrain-2, ...) is used."""
    keep_freed_memory()                                # reuse each step's big buffers: no page faults per step
    module, function = train.split(":")
    module = importlib.import_module(module)
    train, options_class = getattr(module, function), getattr(module, options_name)
    fields = {f.name for f in dataclasses.fields(options_class)}
    opts = options_class(**{k: v for k, v in vars(args).items() if k in fields and v is not None})
    typed = getattr(args, "typed", set()) & fields
    if "out" not in typed and not (args.resume or args.overwrite):
        out = free_run_dir(opts.out)
        if out != opts.out:
            say(f"{opts.out} holds an earlier run (continue it with --resume, replace it with --overwrite); "
                f"this run goes to {out}")
            opts = dataclasses.replace(opts, out=out)
    result = train(opts, resume=args.resume, overwrite=args.overwrite, given=typed | {"out"})
    return 128 + result["signal"] if result.get("signal") else 0     # Ctrl-C 130, SIGTERM 143 (as a shell says)
