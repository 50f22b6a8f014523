"""Fill-mask: the model's top-k guesses for each [MASK] in a text ("the man went to the [MASK] .")."""
from __future__ import annotations

import numpy as np

from npbert.errors import CheckpointError, InputError
from npbert.inference import masked_lm_inference

MASK = "[MASK]"


def encode_with_masks(tokenizer, text) -> list:
    """[CLS] text [SEP] as ids, with each literal "[MASK]" in text kept as the mask token."""
    pieces = text.split(MASK)
    if len(pieces) < 2:
        raise InputError(f"the text has no {MASK} to fill: {text!r}")
    ids = [tokenizer.cls_token_id]
    for i, piece in enumerate(pieces):
        ids += tokenizer.convert_tokens_to_ids(tokenizer.tokenize(piece))
        if i < len(pieces) - 1:
            ids.append(tokenizer.mask_token_id)
    return ids + [tokenizer.sep_token_id]


def unknown_words(tokenizer, text) -> list:
    """The words of text the model reads as [UNK] (not in its vocabulary), as written, in order:
    the output shows the text as typed, so nothing else tells a reader the model never saw them."""
    tokenized = tokenizer.tokenize_with_offsets(text)
    return [text[start:end] for token, (start, end) in zip(tokenized.tokens, tokenized.offsets)
            if token == tokenizer.unk_token]


def fill_mask(params, config, tokenizer, text, top_k=5) -> list:
    """-> for each [MASK], in order: a list of (token, probability), best first."""
    if "cls.predictions.bias" not in params:
        what = "/".join(config.extra.get("architectures") or ["BertModel"])
        hint = "; a fine-tuned model predicts with `npbert predict`" if any(
            c.startswith("BertFor") and c != "BertForPreTraining" for c in what.split("/")) else ""
        raise CheckpointError(f"this checkpoint is a {what} and has no masked-LM head (cls.predictions.*), so "
                              f"it cannot fill masks{hint}")
    ids = np.array([encode_with_masks(tokenizer, text)])                     # (1, T)
    positions = np.flatnonzero(ids[0] == tokenizer.mask_token_id)            # (M,)
    best, log_p = masked_lm_inference(params, config, ids, mlm_positions=positions, top_k=top_k)   # (M, k) each
    return [[(tokenizer.convert_ids_to_tokens([int(i)])[0], float(np.exp(lp))) for i, lp in zip(row, row_log_p)]
            for row, row_log_p in zip(best, log_p)]
