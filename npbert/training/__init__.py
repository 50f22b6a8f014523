"""Training machinery shared by pretraining and fine-tuning, one idea per module:

    run.py               one run's lifecycle: checks, the lock, resume, the run directory, saving only
                         finite models, failures in one line, how the run ended; a Recipe per kind
    inputs.py            the inputs a run reads, pinned: absolute paths + SHA-256, checked on resume
    loop.py              the step (forward, finite checks, backward, clip, AdamW, schedule), progress
                         lines, evaluation and checkpoint timing, Ctrl-C: written once, used by both
    state.py             the training checkpoint (model + optimizer + RNG + data position), atomic
    run_dir.py           the run directory: what it holds, read once (Empty, Run or Foreign), what may be
                         written where, --overwrite without loss; one writer at a time (npbert/lock.py)
    training_options.py  the options both runs share, declared once; which may change on resume
    progress.py          progress lines, tokens/s, ETA, running means
    metrics_log.py       metrics.jsonl
    interrupt.py         Ctrl-C: stop after this step, save, exit
    overfitting.py       the warning when held-out loss keeps rising

npbert/pretraining/recipe.py (with npbert/pretraining/) and npbert/finetuning/recipe.py (with npbert/finetuning/) keep
only what is their own: their options, data, model and metrics, handed to run.py as a Recipe.
"""
