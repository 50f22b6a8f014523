"""`npbert pretrain` (npbert/pretraining): the loop and resume, the budget, the corpus' defaults,
masked LM only, short sequences first then long, continuing a checkpoint, the run directory and
kills during a save."""
