"""The next-sentence-prediction head: a linear layer H -> 2 on the pooled output
(docs/layers/nsp_head.md). Label 0 = IsNext (B follows A), 1 = NotNext, as in HF."""
from npbert import backend
from npbert.ops import LinearCache
from npbert.trace import NO_TRACE

W = "cls.seq_relationship"


def nsp_head_forward(pooled, params, trace=NO_TRACE):
    # pooled: (B, H) -> logits: (B, 2), cache: the linear layer's; trace: scope "cls.seq_relationship"
    logits, cache = backend.linear_forward(pooled, params[W + ".weight"], params[W + ".bias"])
    trace.record("", logits)
    return logits, cache


def nsp_head_backward(dlogits, cache: LinearCache, trace=NO_TRACE):
    # dlogits: (B, 2) -> dpooled: (B, H), grads by HF name
    trace.record_grad("", dlogits)
    dpooled, dw, db = backend.linear_backward(dlogits, cache)
    return dpooled, {W + ".weight": dw, W + ".bias": db}
