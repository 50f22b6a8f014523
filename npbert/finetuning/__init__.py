"""What is fine-tuning's own, one idea per module; recipe.py puts them together into a run of
the shared lifecycle (npbert/training/run.py), as npbert/pretraining/ does:

    recipe.py            FinetuningRecipe and finetune(): the parts below as one run (rank 11)
    finetune_options.py  its options, declared once (npbert/option_declaration.py): dataclass,
                         argparse, checks
    from_checkpoint.py   the model a run starts from: a checkpoint (--model; its head kept if it
                         fits the task) or a preset's random weights (--from-scratch)
    job.py               the Job the shared loop runs: the task's examples read and encoded, the
                         task model's steps, the dev set scored at each epoch's end, the best kept
    evaluation.py        a fine-tuned model at work: loaded for a task, run, its outputs decoded and
                         scored (`npbert evaluate`, `npbert predict`, the dev and test evaluations)
    bow_baseline.py      the bag-of-words baseline (python -m npbert.finetuning.bow_baseline)
"""
