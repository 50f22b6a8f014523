"""The model's inputs checked: a clear message instead of a traceback from deep inside.

    check_inputs   input_ids, token_type_ids, attention_mask (B, T) against the config
    check_labels   pretraining's mlm_positions, mlm_labels (M,) and nsp_labels (B,)
    check_range    integer ids inside [0, limit): what every id a model reads must be
"""
from __future__ import annotations

import numpy as np

from npbert.config import BertConfig
from npbert.errors import InputError
from npbert.ops import IGNORE_INDEX


def check_range(name, a, limit, limit_name, allow=None):
    """a: integers in [0, limit) (or equal to allow), else an InputError naming the first one outside."""
    if not np.issubdtype(a.dtype, np.integer):
        raise InputError(f"{name} must be integers, got dtype {a.dtype}")
    bad = (a < 0) | (a >= limit)
    if allow is not None:
        bad &= a != allow
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"{name}{list(where)} = {int(a[where])} is outside [0, {limit}) ({limit_name} = {limit})")



def check_inputs(config: BertConfig, input_ids, token_type_ids=None, attention_mask=None):
    """Validate and normalise the model inputs; returns (input_ids, token_type_ids, attention_mask)."""
    input_ids = np.asarray(input_ids)
    if input_ids.ndim != 2 or not np.issubdtype(input_ids.dtype, np.integer):
        raise InputError(f"input_ids must be a 2-D integer array (batch, seq_len), got shape "
                         f"{input_ids.shape} and dtype {input_ids.dtype}")
    B, T = input_ids.shape
    if T == 0 or B == 0:
        raise InputError(f"input_ids is empty: shape {input_ids.shape}")
    if T > config.max_position_embeddings:
        raise InputError(f"sequence length {T} is longer than max_position_embeddings "
                         f"({config.max_position_embeddings})")
    check_range("input_ids", input_ids, config.vocab_size, "vocab_size")
    if token_type_ids is None:
        token_type_ids = np.zeros_like(input_ids)
    token_type_ids = np.asarray(token_type_ids)
    _check_shape("token_type_ids", token_type_ids, (B, T))
    check_range("token_type_ids", token_type_ids, config.type_vocab_size, "type_vocab_size")
    if attention_mask is None:
        attention_mask = np.ones_like(input_ids)
    attention_mask = np.asarray(attention_mask)
    _check_shape("attention_mask", attention_mask, (B, T))
    if not np.isin(attention_mask, (0, 1)).all():
        raise InputError("attention_mask must hold only 0 (padding) and 1 (real token)")
    empty = np.flatnonzero(~attention_mask.any(axis=1))
    if len(empty):
        raise InputError(f"attention_mask row {int(empty[0])} masks every token; each row needs at least one 1")
    return input_ids, token_type_ids, attention_mask



def _check_shape(name, a, shape):
    if a.shape != tuple(shape):
        raise InputError(f"{name} has shape {a.shape}, expected {tuple(shape)} to match input_ids")



def check_labels(config, B, T, mlm_positions, mlm_labels, nsp_labels):
    """Validate and normalise pretraining's labels; returns (mlm_positions, mlm_labels, nsp_labels)."""
    mlm_positions = _int_array([] if mlm_positions is None else mlm_positions).reshape(-1)
    mlm_labels = np.full(len(mlm_positions), IGNORE_INDEX) if mlm_labels is None else _int_array(mlm_labels)
    if mlm_labels.shape != mlm_positions.shape:
        raise InputError(f"mlm_labels has shape {mlm_labels.shape} but mlm_positions has {mlm_positions.shape}")
    check_range("mlm_positions", mlm_positions, B * T, "batch * seq_len")
    check_range("mlm_labels", mlm_labels, config.vocab_size, "vocab_size", allow=IGNORE_INDEX)
    nsp_labels = np.full(B, IGNORE_INDEX) if nsp_labels is None else np.asarray(nsp_labels).reshape(-1)
    if nsp_labels.shape != (B,):
        raise InputError(f"nsp_labels has shape {nsp_labels.shape}, expected ({B},), one per sequence")
    check_range("nsp_labels", nsp_labels, 2, "IsNext/NotNext classes", allow=IGNORE_INDEX)
    return mlm_positions, mlm_labels, nsp_labels



def _int_array(a):
    a = np.asarray(a)
    return a.astype(np.int64) if a.size == 0 else a    # [] becomes float64 in NumPy: no entries, no harm



def mlm_positions_from_labels(labels):
    """Hugging Face style MLM labels (B, T), IGNORE_INDEX where not predicted -> (positions, labels)
    with positions flat indices into the B*T tokens, as pretraining_forward takes them."""
    labels = np.asarray(labels)
    positions = np.flatnonzero(labels.reshape(-1) != IGNORE_INDEX)  # (N,)
    return positions, labels.reshape(-1)[positions]
