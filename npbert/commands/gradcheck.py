"""`npbert gradcheck`: every op and the whole pretraining model against central differences."""
from npbert.commands import add_backend_argument
from npbert.commands.arg_types import probability, seed


def register(sub):
    p = sub.add_parser("gradcheck", help="check every hand-written backward against finite differences (float64)",
                       description="Check every hand-written backward pass (each op, each layer, the whole "
                                   "pretraining model and every fine-tuning head) against central finite "
                                   "differences in float64, on small random inputs, and print one row per check. "
                                   "Exit code 1 if any check fails. See docs/gradcheck.md.")
    p.add_argument("--dropout", type=probability, default=0.1, help="hidden and attention dropout")
    p.add_argument("--hidden-act", choices=("gelu", "gelu_new"), default="gelu",
                   help="activation of the layers and models checked (the gelu rows check both)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random inputs and dropout masks")
    add_backend_argument(p, help="hot-op backend to check (default: numpy, or NPBERT_BACKEND)")
    p.add_argument("--only", nargs="+", default=None, metavar="NAME",
                   help="run only these checks: a row's name (layernorm, gelu[gelu_new]), a name without its "
                        "[variant] for all its variants (gelu), or a pattern with * (bert_for_*); a plain prefix "
                        "is not enough (linear runs linear, not linear_gelu) (default: every check)")
    p.set_defaults(func=run)


def run(args):
    from npbert.backend import get_backend
    from npbert.gradcheck import TOL, Dims, iter_gradchecks, op_cases
    d = Dims(dropout=args.dropout, hidden_act=args.hidden_act, lengths=(3, 5), seed=args.seed)
    results = iter_gradchecks(d, names=args.only)     # unknown names: an error before anything is printed
    width = max(map(len, op_cases(d)))                # the longest row name: the columns line up for any --only
    print(f"central differences in float64, eps=1e-6; pass if max relative error < {TOL:g}; backend "
          f"{get_backend()}; dropout={d.dropout}, hidden_act={d.hidden_act}, padding rows {d.lengths}")
    print(f"{'op':{width}s} {'shapes':44s} {'max rel err':>11s}  result")
    failed = 0
    for r in results:
        failed += not r.passed
        print(f"{r.name:{width}s} {r.shapes:44s} {r.max_error:11.2e}  {'pass' if r.passed else 'FAIL'}", flush=True)
    print(f"{'all passed' if not failed else f'{failed} FAILED'}")
    return 1 if failed else 0
