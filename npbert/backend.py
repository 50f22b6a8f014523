"""One switch for the hot ops: the readable NumPy reference (npbert/ops) or the Numba kernels
(npbert/kernels). The composite layers (npbert/layers) call the hot ops through the plain
functions below, each of which names both implementations, so an editor's go-to-definition
leads to either:

    npbert.set_backend("numpy")        # or "numba"; also NPBERT_BACKEND=numpy|numba (any case)
    with backend.use_backend("numba"):  # for a block, then back to the one before
        ...

Both backends keep the same signatures and return the same cache records, field for field
(shapes and dtypes too, but the LayerNorm kernel's float64 rstd), so either backend's backward
takes either backend's cache.

The default is "numpy", or NPBERT_BACKEND when it is set; the training commands (`npbert
pretrain`, `npbert finetune`) select "numba" unless NPBERT_BACKEND is set
(npbert.commands.training_backend).
"""
from __future__ import annotations

import contextlib
import sys

from npbert import kernels, ops
from npbert.environment import BACKENDS, backend_from_environment
from npbert.errors import NpbertError
HOT_OPS = ("linear_forward", "linear_backward", "linear_gelu_forward", "linear_gelu_backward",
           "embedding_forward", "embedding_backward", "layernorm_forward", "layernorm_backward",
           "gelu_forward", "gelu_backward", "dropout_forward", "dropout_backward",
           "attention_core_forward", "attention_core_backward", "cross_entropy_forward", "cross_entropy_backward",
           "adamw_update", "sum_of_squares", "packed_attention_forward",
           "packed_attention_backward", "dropout_rows_forward", "decoder_cross_entropy_forward",
           "decoder_cross_entropy_backward", "decoder_log_softmax_at")
_numba = None                       # True: the kernels; None: not chosen yet (the default on first use)
_compile_announced = False          # the first kernel call has checked once for an empty kernel cache


def set_backend(name: str) -> None:
    """Select the implementation of the hot ops: "numpy" (reference) or "numba"."""
    global _numba
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if name == "numba" and numba_jit_disabled():
        raise NpbertError("NUMBA_DISABLE_JIT=1: the numba backend's kernels cannot run as plain Python (they call "
                          "BLAS through Numba's intrinsics); unset it, or run the reference with --backend numpy")
    _numba = name == "numba"


def numba_jit_disabled() -> bool:
    import numba
    return bool(numba.config.DISABLE_JIT)


def get_backend() -> str:
    return "numba" if _chosen() else "numpy"


@contextlib.contextmanager
def use_backend(name: str):
    """Run a block with backend `name`, then restore the previous one (even on error)."""
    previous = get_backend()
    set_backend(name)
    try:
        yield
    finally:
        set_backend(previous)


def _chosen() -> bool:
    """The numba backend is in force (chosen on first use from NPBERT_BACKEND if not set)."""
    if _numba is None:
        set_backend(backend_from_environment() or "numpy")
    return _numba


def _kernels() -> bool:
    """_chosen(), for a hot op about to run: the first kernel call says so if the kernels compile now
    (not the choice of the backend: a command that stops at bad input compiles nothing)."""
    if _chosen() and not _compile_announced:
        _announce_compile()
    return _numba


def _announce_compile() -> None:
    """At the first kernel call: with an empty kernel cache, say that they compile now
    (half a minute without a word otherwise). On stderr: a command's stdout may be its data."""
    global _compile_announced
    _compile_announced = True
    if kernels.jit_cache.cache_is_cold():
        print(kernels.jit_cache.compile_message(), file=sys.stderr, flush=True)


# --- the hot ops: reference or kernel --------------------------------------------------------------

def linear_forward(x, w, b):
    return (kernels.linear_forward if _kernels() else ops.linear_forward)(x, w, b)


def linear_backward(dy, cache):
    return (kernels.linear_backward if _kernels() else ops.linear_backward)(dy, cache)


def sum_of_squares(x):
    return (kernels.sum_of_squares if _kernels() else ops.sum_of_squares)(x)


def packed_attention_forward(q, k, v, layout, num_heads, p_drop=0.0, key=None):
    return (kernels.packed_attention_forward if _kernels() else ops.packed_attention_forward)(q, k, v, layout,
                                                                                              num_heads, p_drop, key)


def packed_attention_backward(dcontext, cache):
    return (kernels.packed_attention_backward if _kernels() else ops.packed_attention_backward)(dcontext, cache)


def linear_gelu_forward(x, w, b, hidden_act):
    return (kernels.linear_gelu_forward if _kernels() else ops.linear_gelu_forward)(x, w, b, hidden_act)


def linear_gelu_backward(dy, cache):
    return (kernels.linear_gelu_backward if _kernels() else ops.linear_gelu_backward)(dy, cache)


def embedding_forward(ids, table, padding_idx=None):
    return (kernels.embedding_forward if _kernels() else ops.embedding_forward)(ids, table, padding_idx)


def embedding_backward(dout, cache):
    return (kernels.embedding_backward if _kernels() else ops.embedding_backward)(dout, cache)


def layernorm_forward(x, gamma, beta, eps):
    return (kernels.layernorm_forward if _kernels() else ops.layernorm_forward)(x, gamma, beta, eps)


def layernorm_backward(dy, cache):
    return (kernels.layernorm_backward if _kernels() else ops.layernorm_backward)(dy, cache)


def gelu_forward(x, hidden_act="gelu"):
    return (kernels.gelu_forward if _kernels() else ops.gelu_forward)(x, hidden_act)


def gelu_backward(dy, cache):
    return (kernels.gelu_backward if _kernels() else ops.gelu_backward)(dy, cache)


def dropout_forward(x, p_drop, rng):
    return (kernels.dropout_forward if _kernels() else ops.dropout_forward)(x, p_drop, rng)


def dropout_rows_forward(x, p_drop, key, rows=None):
    return (kernels.dropout_rows_forward if _kernels() else ops.dropout_rows_forward)(x, p_drop, key, rows)


def dropout_backward(dy, cache):
    return (kernels.dropout_backward if _kernels() else ops.dropout_backward)(dy, cache)


def attention_core_forward(q, k, v, mask_bias, p_drop, rng):
    return (kernels.attention_core_forward if _kernels() else ops.attention_core_forward)(q, k, v, mask_bias,
                                                                                          p_drop, rng)


def attention_core_backward(dcontext, cache):
    return (kernels.attention_core_backward if _kernels() else ops.attention_core_backward)(dcontext, cache)


def cross_entropy_forward(logits, labels, ignore_index=ops.IGNORE_INDEX):
    return (kernels.cross_entropy_forward if _kernels() else ops.cross_entropy_forward)(logits, labels, ignore_index)


def cross_entropy_backward(dloss, cache):
    return (kernels.cross_entropy_backward if _kernels() else ops.cross_entropy_backward)(dloss, cache)


def decoder_cross_entropy_forward(t, w, b, labels, ignore_index=ops.IGNORE_INDEX, grad=True):
    return (kernels.decoder_cross_entropy_forward if _kernels() else ops.decoder_cross_entropy_forward)(
        t, w, b, labels, ignore_index, grad)


def decoder_cross_entropy_backward(dloss, cache):
    return (kernels.decoder_cross_entropy_backward if _kernels() else ops.decoder_cross_entropy_backward)(dloss, cache)


def decoder_log_softmax_at(t, w, b, targets):
    return (kernels.decoder_log_softmax_at if _kernels() else ops.decoder_log_softmax_at)(t, w, b, targets)


def adamw_update(p, g, m, v, lr, b1, b2, eps, c1, c2, weight_decay):
    return (kernels.adamw_update if _kernels() else ops.adamw_update)(p, g, m, v, lr, b1, b2, eps, c1, c2,
                                                                      weight_decay)
