"""The extractive-QA head of BertForQuestionAnswering and its span loss
(docs/layers/question_answering.md):

    logits = h W^T + b                 W = "qa_outputs.weight" (2, H): start and end scores
    loss   = (CE(logits[..., 0], start) + CE(logits[..., 1], end)) / 2    over the T positions

No dropout before qa_outputs (Hugging Face has none there). Positions outside the window are
treated as Hugging Face treats them: clamped into [0, T], and T is ignored, so an answer the
window cut off (position >= T) adds no loss and a negative position becomes 0 ([CLS]).
npbert's own QA encoding never hands out such positions: an answer not inside a window is
labelled 0, 0 ([CLS]), as the original BERT run_squad.py does.
"""
from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.ops import CrossEntropyCache, LinearCache
from npbert.trace import NO_TRACE

W = "qa_outputs"


class SpanLossCache(NamedTuple):
    start: CrossEntropyCache     # over the T positions, one row per sequence
    end: CrossEntropyCache


def qa_head_forward(h, params, trace=NO_TRACE):
    # h: (B, T, H) -> logits: (B, T, 2), [..., 0] start and [..., 1] end; cache: the linear layer's
    logits, cache = backend.linear_forward(h, params[W + ".weight"], params[W + ".bias"])
    trace.record(W, logits)
    return logits, cache


def qa_head_backward(dlogits, cache: LinearCache, trace=NO_TRACE):
    # dlogits: (B, T, 2) -> dh: (B, T, H), grads by HF name
    trace.record_grad(W, dlogits)
    dh, dw, db = backend.linear_backward(dlogits, cache)
    return dh, {W + ".weight": dw, W + ".bias": db}


def span_loss_forward(logits, start_positions, end_positions):
    # logits: (B, T, 2), positions: (B,) integer -> scalar loss
    T = logits.shape[1]
    ends = []
    for k, positions in enumerate((start_positions, end_positions)):
        clamped = np.clip(np.asarray(positions).reshape(-1), 0, T)               # (B,) T = ignored
        ends.append(backend.cross_entropy_forward(np.ascontiguousarray(logits[..., k]), clamped, ignore_index=T))
    (start_loss, start_cache), (end_loss, end_cache) = ends
    return logits.dtype.type((start_loss + end_loss) / 2), SpanLossCache(start_cache, end_cache)


def span_loss_backward(dloss, cache: SpanLossCache):
    # -> dlogits: (B, T, 2)
    dstart = backend.cross_entropy_backward(dloss / 2, cache.start)               # (B, T)
    dend = backend.cross_entropy_backward(dloss / 2, cache.end)                   # (B, T)
    return np.stack([dstart, dend], axis=-1)                                      # (B, T, 2)
