"""What `npbert pretrain` and `npbert finetune` share on the command line: the optimizer
options, the run controls (seed, logging, stop, resume, overwrite, backend), and how a parsed
command line becomes an options dataclass and a run."""
import dataclasses

from npbert.allocator import keep_freed_memory
from npbert.commands import add_backend_argument, training_backend


def add_optimizer_arguments(p, defaults):
    p.add_argument("--batch-size", type=int, default=defaults.batch_size, help="sequences per step")
    p.add_argument("--learning-rate", type=float, default=defaults.learning_rate, help="peak learning rate")
    p.add_argument("--weight-decay", type=float, default=defaults.weight_decay,
                   help="AdamW weight decay (not on LayerNorm weights or biases)")
    p.add_argument("--max-grad-norm", type=float, default=defaults.max_grad_norm,
                   help="clip the gradients to this global norm")


def add_run_arguments(p, defaults):
    p.add_argument("--seed", type=int, default=defaults.seed,
                   help="seed of the initialisation, batch order and dropout")
    p.add_argument("--log-every", type=int, default=defaults.log_every,
                   help="print and log the training loss every N steps")
    p.add_argument("--stop-after", type=int, default=None,
                   help="save and stop after this many steps (default: run to the end)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out exactly where it stopped")
    p.add_argument("--overwrite", action="store_true", help="delete an existing --out and start again")
    add_backend_argument(p, help="hot-op backend (default: numba, or NPBERT_BACKEND)", default=training_backend())


def run_training(train, options_class, args) -> int:
    """Build options_class from the arguments it names (None: keep its default) and run train
    (--backend was applied by npbert.cli.main); exit code 130 when the run stopped early on
    Ctrl-C (its checkpoint is resumable)."""
    keep_freed_memory()                                # reuse each step's big buffers: no page faults per step
    fields = {f.name for f in dataclasses.fields(options_class)}
    opts = options_class(**{k: v for k, v in vars(args).items() if k in fields and v is not None})
    result = train(opts, resume=args.resume, overwrite=args.overwrite)
    return 130 if result.get("stopped") and not args.stop_after else 0
