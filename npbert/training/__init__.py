"""Training machinery shared by pretraining and fine-tuning, one idea per module:

    loop.py         the step (forward, finite checks, backward, clip, AdamW, schedule), progress
                    lines, evaluation and checkpoint timing, Ctrl-C: written once, used by both
    state.py        the training checkpoint (model + optimizer + RNG + data position), atomic
    run_dir.py      the run directory: what may be written where, --overwrite without loss
    options.py      a run's options: checked first; which may change on resume
    progress.py     progress lines, tokens/s, ETA, running means
    metrics_log.py  metrics.jsonl
    interrupt.py    Ctrl-C: stop after this step, save, exit
    overfitting.py  the warning when held-out loss keeps rising

npbert/pretrain.py and npbert/finetune.py keep only what is their own: data, heads, metrics.
"""
