"""Pretraining a checkpoint further (--model): its architecture, weights, vocabulary and casing;
a new optimizer and schedule; new MLM / NSP heads where it has none."""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from npbert.checkpoint import VOCAB_FILE
from npbert.config import BertConfig
from npbert.errors import CheckpointError, DataError, NpbertError
from npbert.model_params import init_params
from npbert.heads.params import pretraining_config
from npbert.tokenizer import load_vocab


def check_data_fits(config: BertConfig, data, model) -> None:
    """DataError unless the data's token ids and sequence lengths fit the model's embeddings, before
    the first step rather than deep inside it."""
    if config.vocab_size != data.vocab_size:
        raise DataError(f"{model}'s vocab_size {config.vocab_size} does not match the {data.vocab_size:,} tokens "
                        f"of {data.directory}'s vocabulary")
    if data.max_seq_length > config.max_position_embeddings:
        raise DataError(f"{data.directory} holds sequences of up to {data.max_seq_length} tokens, more than "
                        f"{model}'s max_position_embeddings {config.max_position_embeddings}")


def checkpoint_options(opts, loaded):
    """opts checked for --model (loaded: the checkpoint). A corpus is prepared with the checkpoint's
    vocab.txt and casing unless --vocab / --cased say otherwise, not with a newly trained,
    lower-cased vocabulary that its weights would not fit."""
    if opts.model_overrides:
        raise NpbertError("--model takes the checkpoint's architecture; model_overrides cannot change it")
    if loaded.tokenizer is None:
        raise CheckpointError(f"{opts.model} has no {VOCAB_FILE}, so there is no telling whether the data's "
                              "token ids mean what its embeddings learned")
    if opts.data is not None:
        return opts
    return dataclasses.replace(
        opts, vocab=opts.vocab or os.path.join(opts.model, VOCAB_FILE),
        do_lower_case=loaded.tokenizer.do_lower_case if opts.do_lower_case is None else opts.do_lower_case)


def start_from_checkpoint(opts, loaded, data, log) -> tuple:
    """(config, params) to pretrain the checkpoint `loaded` further: its weights, this run's dropout,
    and new MLM / NSP heads (and pooler) where it has none, as from a Hugging Face BertModel."""
    vocab = os.path.join(opts.model, VOCAB_FILE)
    if loaded.tokenizer.ids_to_tokens != load_vocab(data.vocab_file):
        raise DataError(f"{data.directory} was prepared with a different vocabulary ({data.vocab_file}, "
                        f"{data.vocab_size:,} tokens) from {vocab} ({loaded.config.vocab_size:,} tokens); prepare "
                        f"the corpus with --vocab {vocab}")
    lower = loaded.tokenizer.do_lower_case
    if data.do_lower_case != lower:
        raise DataError(f"{data.directory} was prepared {'cased' if lower else 'lower-cased'}, but {opts.model}'s "
                        f"tokenizer is {'lower-cased' if lower else 'cased'}; prepare it with `npbert prepare "
                        f"--vocab {vocab}{'' if lower else ' --cased'}`")
    config = dataclasses.replace(pretraining_config(loaded.config), **dropout_options(opts))
    fresh = init_params(config, np.random.default_rng(opts.seed), np.float32)
    params = {name: loaded.params.get(name, a) for name, a in fresh.items()}
    new, dropped = [n for n in fresh if n not in loaded.params], [n for n in loaded.params if n not in fresh]
    log(f"from {opts.model}: its weights" + (f"; new (random): {', '.join(new)}" if new else "")
        + (f"; not used: {', '.join(dropped)}" if dropped else ""))
    return config, params


def dropout_options(opts) -> dict:
    return dict(hidden_dropout_prob=opts.hidden_dropout_prob,
                attention_probs_dropout_prob=opts.attention_probs_dropout_prob)
