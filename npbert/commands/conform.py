"""`npbert conform GOLDEN_DIR RESULTS_DIR`: a port's results against the golden vectors."""


def register(sub):
    p = sub.add_parser("conform", help="compare a port's results with golden vectors; name where it first differs",
                       description="Compare a port's results (at each case's manifest `file` under RESULTS_DIR, e.g. "
                                   "RESULTS_DIR/float64/linear.safetensors, or a folder float64/linear/ of one .npy "
                                   "per tensor, under the golden names) with the goldens that "
                                   "`npbert golden` wrote: a table per case of each tensor's max absolute and "
                                   "relative error and PASS/FAIL against the manifest's tolerance, and for a whole "
                                   "model the first intermediate, in forward order, where the port leaves "
                                   "tolerance, for a training case the first step and quantity (one verdict line: "
                                   "PASS, MISSING: ..., or FAIL: first differs at `NAME` (WHERE): ...). Exit 0 only if every selected case passes (1 otherwise, 2 for bad "
                                   "input). See docs/porting.md.")
    p.add_argument("golden", metavar="GOLDEN_DIR", help="a directory `npbert golden` wrote")
    p.add_argument("results", metavar="RESULTS_DIR", help="the port's results")
    p.add_argument("--only", nargs="+", default=None, metavar="CASE",
                   help="check only these cases: a name (linear, gelu for both its variants, bert_for_*, "
                        "tokenizer) or dtype/name (float64/linear) (default: every case; one without results "
                        "is MISSING)")
    p.add_argument("--failures", action="store_true",
                   help="print only the failing tensors (and one line per passing case)")
    p.set_defaults(func=run)


def run(args):
    from npbert.golden.conform import conform, format_report
    check_not_the_goldens(args.golden, args.results)
    reports = conform(args.golden, args.results, only=args.only)
    print(format_report(reports, failures_only=args.failures))
    return 0 if all(r.passed for r in reports) else 1


def check_not_the_goldens(golden, results) -> None:
    """Refuse RESULTS_DIR when it is GOLDEN_DIR itself (any spelling, a link, a bind mount: the same
    device and inode): the goldens compared with themselves pass every case and prove nothing."""
    import os

    from npbert.errors import InputError
    if os.path.isdir(golden) and os.path.isdir(results) and os.path.samefile(golden, results):
        raise InputError(f"RESULTS_DIR {results} is GOLDEN_DIR {golden} itself: the goldens would be compared with "
                         "themselves and pass; give the directory your port wrote its results to")
