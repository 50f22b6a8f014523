"""The model a fine-tuning run starts from: a checkpoint's BertModel (--model), its own task head
kept when it fits the task and --features, or a preset's random weights (--from-scratch: a
baseline); a new head where none is kept. The config records --features (npbert/heads/feature_based.py)."""
from __future__ import annotations

import dataclasses

import numpy as np

from npbert.checkpoint import load_pretrained
from npbert.config import BertConfig
from npbert.errors import CheckpointError, DataError, NpbertError
from npbert.heads.feature_based import FIELD, FINE_TUNE, features_named, with_features
from npbert.heads.params import check_head, init_head, label_names_of
from npbert.model_params import init_params
from npbert.tokenizer import BertTokenizer


def start_model(opts, task, labels, log):
    """(config, params with a head, tokenizer): a checkpoint's BertModel, or a random one
    (--from-scratch); a checkpoint's own head is kept if it fits the task and --features, else a
    new one. The config records --features (and the model must have the hidden states it takes)."""
    if (opts.model is None) == (opts.from_scratch is None):
        raise NpbertError("give exactly one of --model CHECKPOINT_DIR and --from-scratch PRESET")
    num_labels = task.format.num_labels(labels)
    overrides = {k: getattr(opts, k) for k in ("hidden_dropout_prob", "attention_probs_dropout_prob")
                 if getattr(opts, k) is not None}
    if opts.from_scratch:
        tokenizer = scratch_tokenizer(opts, task)
        config = BertConfig.from_preset(opts.from_scratch, vocab_size=tokenizer.vocab_size, **overrides)
        params, saved = init_params(config, np.random.default_rng(opts.seed), np.float32, heads=False), {}
        log(f"from scratch: {opts.from_scratch} preset, random weights, vocabulary of {tokenizer.vocab_size:,}")
    else:
        loaded = load_pretrained(opts.model, strict=False)
        if loaded.tokenizer is None:
            raise CheckpointError(f"{opts.model} has no vocab.txt, so the task's texts cannot be tokenized")
        config, tokenizer = dataclasses.replace(loaded.config, **overrides), loaded.tokenizer
        params = {k: v for k, v in loaded.params.items() if k.startswith("bert.")}   # drop MLM/NSP heads
        saved = {k: v for k, v in loaded.params.items() if not k.startswith(("bert.", "cls."))}   # its task head
    features_named(opts.features, config.num_hidden_layers, "--features", NpbertError)   # states it has
    head = task.head
    if saved and keeps_head(saved, config, head, labels, num_labels, opts, log):
        params.update(saved)
        return config, params, tokenizer
    if opts.model:
        log(f"from {opts.model}: {config.num_hidden_layers} layers, hidden {config.hidden_size}; new "
            f"{head.architecture} head")
    config = with_features(config, opts.features)
    params.update(init_head(config, head, num_labels, np.random.default_rng([opts.seed, 2]), np.float32))
    return config, params, tokenizer


def keeps_head(saved, config, head, labels, num_labels, opts, log) -> bool:
    """A fine-tuned checkpoint's head is trained further if it is the same head with the same labels,
    reading the same features; another architecture's head, or one on other features, is dropped."""
    where = opts.model
    if config.extra.get("architectures") != [head.architecture]:
        log(f"from {where}: dropping its {', '.join(config.extra.get('architectures') or ['unknown'])} head")
        return False
    if config.extra.get(FIELD, FINE_TUNE) != opts.features:
        log(f"from {where}: dropping its head (--features {config.extra.get(FIELD, FINE_TUNE)}; this run: "
            f"{opts.features})")
        return False
    k = check_head(saved, config, head, where)             # a head that does not fit: an error
    wanted = head.num_outputs(num_labels)                  # rows, not labels: a choice head scores each ending (1)
    same = k == wanted and (labels is None or label_names_of(config) in (None, labels))
    log(f"from {where}: {'continuing its' if same else 'replacing its'} {head.architecture} head "
        f"({k} outputs{'' if same else f', the task needs {wanted}'})")
    return same


def scratch_tokenizer(opts, task):
    if opts.vocab:
        return BertTokenizer(opts.vocab)
    if task.name.startswith("builtin-"):
        from npbert.data.builtin_vocab import builtin_vocab
        return BertTokenizer(builtin_vocab())
    raise DataError(f"--from-scratch on {task.name} needs --vocab VOCAB_TXT (use the pretrained model's "
                    "vocab.txt, so the comparison differs only in the weights)")
