"""What `npbert pretrain` and `npbert finetune` share on the command line beside their declared
options (npbert/training/options.py): --resume, --overwrite, --backend, which options
were typed (a resumed run refuses a typed option that would change it, even one typed with its
default value), and how a parsed command line becomes an options dataclass and a run."""
import argparse
import dataclasses
import functools
import importlib

from npbert.allocator import keep_freed_memory
from npbert.commands import add_backend_argument, training_backend
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


def add_run_arguments(p, train, options_name):
    """What the command does with a run (not options of the run: npbert/training/options.py has
    those), and func: train ("module:function", imported when the command runs) on the options
    record of that module named options_name."""
    p.add_argument("--resume", action="store_true", help="continue the run in --out exactly where it stopped")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the npbert run in --out with a new one; the old run is kept until the new one "
                        "has saved, and put back if it fails before")
    add_backend_argument(p, help="hot-op backend (default: numba, or NPBERT_BACKEND)", default=training_backend())
    p.set_defaults(func=functools.partial(run_training, train, options_name))


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
