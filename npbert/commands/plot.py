"""`npbert plot RUN_DIR [--out FILE.png]`: a run's metrics.jsonl as a PNG (npbert/run_plot.py)."""


def register(sub):
    p = sub.add_parser("plot", help="draw a run's metrics.jsonl (loss, accuracy vs baselines, lr, tokens/s) "
                                    "into a PNG",
                       description="Draw a pretraining or fine-tuning run's metrics.jsonl into one PNG: training "
                                   "and held-out loss; MLM and NSP accuracy (or the task's dev metrics) against "
                                   "their baselines; the learning rate; tokens/s. Prints what was drawn. Needs "
                                   "matplotlib: pip install 'npbert[plot]'.")
    p.add_argument("run_dir", help="the run directory (the --out of npbert pretrain or npbert finetune)")
    p.add_argument("--out", default=None,
                   help="the PNG to write (default: RUN_DIR/metrics.png); an existing file is replaced only if "
                        "npbert drew it")
    p.set_defaults(func=run)


def run(args):
    from npbert.run_plot import plot_run
    plot_run(args.run_dir, args.out)
    return 0
