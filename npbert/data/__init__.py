"""Data: corpus readers, the built-in corpus and tasks, pretraining instances, shards, batches.

    corpus.py            text files, directories, IMDB -> documents (lists of sentences)
    builtin_corpus.py    npbert's own generated stories (no download); builtin_tasks/: the six labelled tasks
    instances.py         documents of token ids -> masked (A, B) pairs (google-research/bert's algorithm)
    shards.py            instances -> compact .npz shards + manifest.json
    statistics.py        what a preparation realised (mask rate, 80/10/10, IsNext share, lengths)
    prepare_options.py   the options of `npbert prepare` (those of the corpus shared with pretrain), declared once
    prepare.py           the pipeline behind `npbert prepare` (PrepareOptions, prepare)
    pretraining_data.py  PretrainingData: a prepared directory -> model-ready batches
"""
from npbert.data.prepare import PrepareOptions   # not `prepare` itself: it would hide the module of that name
from npbert.data.pretraining_data import PretrainingData
