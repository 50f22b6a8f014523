"""BertForQuestionAnswering: the extractive-QA head and its span loss
(docs/layers/question_answering.md):

    logits = h W^T + b                 W = "qa_outputs.weight" (2, H): start and end scores
    loss   = (CE(logits[..., 0], start) + CE(logits[..., 1], end)) / 2    over the T positions

No dropout before qa_outputs (Hugging Face has none there). Positions outside the window are
treated as Hugging Face treats them: clamped into [0, T], and T is ignored, so an answer the
window cut off (position >= T) adds no loss and a negative position becomes 0 ([CLS]).
npbert's own QA encoding never hands out such positions: an answer not inside a window is
labelled 0, 0 ([CLS]), as the original BERT run_squad.py does.

The windows of a long context and the best span over them are the SPANS format's
(npbert/tasks/formats.py, npbert/tasks/qa.py).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from npbert import backend
from npbert.errors import InputError
from npbert.heads.head import TOKENS, Head
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


# --- the head: qa_outputs and the span loss ----------------------------------------------------------

class SpanHeadCache(NamedTuple):
    qa_outputs: LinearCache
    loss: SpanLossCache | None


def span_head_forward(x, params, config, targets, rng, trace):
    """x: (B, T, F) -> ({"start_logits": (B, T), "end_logits": (B, T), "loss", positions}, cache);
    positions (B,) token indices (see above for positions outside the window). No dropout: rng unused."""
    logits, head_cache = qa_head_forward(x, params, trace)                          # (B, T, 2)
    B = logits.shape[0]
    start_positions, end_positions = targets.get("start_positions"), targets.get("end_positions")
    loss = loss_cache = None
    if start_positions is not None or end_positions is not None:
        start_positions = _positions("start_positions", start_positions, B)
        end_positions = _positions("end_positions", end_positions, B)
        loss, loss_cache = span_loss_forward(logits, start_positions, end_positions)
        trace.record("loss", loss)
    out = dict(start_logits=logits[..., 0], end_logits=logits[..., 1], loss=loss,
               start_positions=start_positions, end_positions=end_positions)
    return out, SpanHeadCache(head_cache, loss_cache)


def span_head_backward(dloss, cache: SpanHeadCache, trace):
    # -> dx: (B, T, F), qa_outputs' grads
    dlogits = span_loss_backward(dloss, cache.loss)                                 # (B, T, 2)
    return qa_head_backward(dlogits, cache.qa_outputs, trace)                       # (B, T, F)


def _positions(name, positions, B):
    if positions is None:
        raise InputError("question answering needs both start_positions and end_positions")
    positions = np.asarray(positions)
    if positions.shape != (B,) or not np.issubdtype(positions.dtype, np.integer):
        raise InputError(f"{name} must be {B} integer token indices, got shape {positions.shape} "
                         f"dtype {positions.dtype}")
    return positions


HEAD = Head(
    name="question_answering", architecture="BertForQuestionAnswering", weight=W, reads=TOKENS, choices=False,
    reads_padding=True, targets=("start_positions", "end_positions"), num_outputs=lambda num_labels: 2,
    forward=span_head_forward, backward=span_head_backward,
    output_of=lambda out, b, T: (out["start_logits"][b, :T], out["end_logits"][b, :T]))
