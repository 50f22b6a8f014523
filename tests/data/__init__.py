"""Pretraining data (npbert/data): the built-in corpus and tasks, corpus readers, instances, prepare,
shards and their manifest."""
