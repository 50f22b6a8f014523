"""What pretraining and fine-tuning share (npbert/training, npbert/optim.py, npbert/lock.py): the
optimizer, the run directory's lifecycle and lock, progress lines, the loss log and options."""
