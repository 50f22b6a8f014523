"""The next-sentence-prediction head: a linear layer H -> 2 on the pooled output
(docs/layers/nsp_head.md). Label 0 = IsNext (B follows A), 1 = NotNext, as in HF."""
from npbert import backend

W = "cls.seq_relationship"


def nsp_head_forward(pooled, params):
    # pooled: (B, H) -> logits: (B, 2)
    return backend.linear_forward(pooled, params[W + ".weight"], params[W + ".bias"])


def nsp_head_backward(dlogits, cache):
    # dlogits: (B, 2) -> dpooled: (B, H), grads by HF name
    dpooled, dw, db = backend.linear_backward(dlogits, cache)
    return dpooled, {W + ".weight": dw, W + ".bias": db}
