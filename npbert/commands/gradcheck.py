"""`npbert gradcheck`: every op and the whole pretraining model against central differences."""
from npbert.commands import add_backend_argument


def register(sub):
    p = sub.add_parser("gradcheck", help="check every hand-written backward against finite differences (float64)")
    p.add_argument("--dropout", type=float, default=0.1, help="hidden and attention dropout (default 0.1)")
    p.add_argument("--hidden-act", choices=("gelu", "gelu_new"), default="gelu")
    p.add_argument("--seed", type=int, default=0)
    add_backend_argument(p, help="hot-op backend to check")
    p.add_argument("--only", nargs="*", default=None, metavar="OP", help="check only these ops")
    p.set_defaults(func=run)


def run(args):
    from npbert.gradcheck import TOL, Dims, run_gradchecks
    d = Dims(dropout=args.dropout, hidden_act=args.hidden_act, lengths=(3, 5), seed=args.seed)
    print(f"central differences in float64, eps=1e-6; pass if max relative error < {TOL:g}; "
          f"dropout={d.dropout}, hidden_act={d.hidden_act}, padding rows {d.lengths}")
    print(f"{'op':34s} {'shapes':44s} {'max rel err':>11s}  result")
    failed = 0
    for r in run_gradchecks(d, names=args.only):
        failed += not r.passed
        print(f"{r.name:34s} {r.shapes:44s} {r.max_error:11.2e}  {'pass' if r.passed else 'FAIL'}", flush=True)
    print(f"{'all passed' if not failed else f'{failed} FAILED'}")
    return 1 if failed else 0
