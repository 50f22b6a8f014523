"""What `npbert pretrain` and `npbert finetune` share on the command line beside their declared
options (npbert/training/training_options.py): --resume, --overwrite, --backend, and how a
parsed command line becomes an options dataclass and a run. Which options were typed (a resumed
run refuses a typed option that would change it, even one typed with its default value) is noted
in args.typed by the declared options' arguments (commands/option_arguments.py)."""
import dataclasses
import functools

from npbert.allocator import keep_freed_memory
from npbert.commands import add_backend_argument, training_backend
from npbert.training.progress import say
from npbert.training.run_dir import free_run_dir


def add_run_arguments(p, train, options_class):
    """What the command does with a run (not options of the run: those are in
    npbert/training/training_options.py), and func: train(options_class(...), resume=,
    overwrite=, given=)."""
    p.add_argument("--resume", action="store_true", help="continue the run in --out exactly where it stopped")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the npbert run in --out with a new one; the old run is kept until the new one "
                        "has saved, and put back if it fails before")
    add_backend_argument(p, help="hot-op backend (default: numba, or NPBERT_BACKEND)", default=training_backend())
    p.set_defaults(func=functools.partial(run_training, train, options_class))


def run_training(train, options_class, args) -> int:
    """Build options_class from the arguments it names (None: keep its default) and run train
    (--backend was applied by npbert.cli.main); exit code 130 when the run stopped early on
    Ctrl-C, 143 on SIGTERM (its checkpoint is resumable either way). Without --out, a default run directory that already
    holds a run is left alone and the next free one (runs/pretrain-2, ...) is used."""
    keep_freed_memory()                                # reuse each step's big buffers: no page faults per step
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
