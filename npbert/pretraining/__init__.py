"""What is pretraining's own, one idea per module; recipe.py puts them together into a run of
the shared lifecycle (npbert/training/run.py):

    recipe.py            PretrainingRecipe and pretrain(): the parts below as one run (rank 11)
    pretrain_options.py  its options, declared once (npbert/option_declaration.py): dataclass,
                         argparse, checks
    corpus.py            the data: a prepared directory, or a corpus prepared into OUT/data
    from_checkpoint.py   --model: pretraining a checkpoint further
    job.py               the Job the shared loop runs: MLM + NSP batches, held-out evaluation
    evaluation.py        MLM / NSP accuracy, held-out evaluation, the baselines
"""
