"""One switch for the hot ops: the readable NumPy reference or the Numba kernels.

Composite layers call hot ops through this module, e.g. `backend.linear_forward(x, w, b)`,
and the call goes to the implementation of the backend in force. Both backends keep the
same signatures and the same (out, cache) contract; a cache is only ever handed back to
the backward of the backend that made it, so do not switch backends between a forward
and its backward.

    npbert.set_backend("numpy")        # or "numba"; also NPBERT_BACKEND=numpy|numba
    with backend.use_backend("numba"):  # for a block, then back to the one before
        ...

The default is "numpy" (the readable reference), or NPBERT_BACKEND when it is set; the
training commands (`npbert pretrain`, `npbert finetune`) select "numba" unless NPBERT_BACKEND
is set (npbert.commands.training_backend).
"""
from __future__ import annotations

import contextlib
import importlib
import os

# The ops a backend may replace. Each name is a function in npbert.ops (the reference).
HOT_OPS = (
    "linear_forward", "linear_backward",
    "linear_gelu_forward", "linear_gelu_backward",
    "embedding_forward", "embedding_backward",
    "layernorm_forward", "layernorm_backward",
    "gelu_forward", "gelu_backward",
    "dropout_forward", "dropout_backward",
    "attention_core_forward", "attention_core_backward",
    "cross_entropy_forward", "cross_entropy_backward",
    "adamw_update",
)

# backend name -> module whose attributes override the reference (missing ones fall back)
_BACKEND_MODULES = {"numpy": None, "numba": "npbert.kernels"}
_table: dict = {}
_name: str = ""


def _reference_table() -> dict:
    ops = importlib.import_module("npbert.ops")
    return {name: getattr(ops, name) for name in HOT_OPS}


def set_backend(name: str) -> None:
    """Select the implementation of the hot ops: "numpy" (reference) or "numba"."""
    global _table, _name
    if name not in _BACKEND_MODULES:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(_BACKEND_MODULES)}")
    table = _reference_table()
    module_name = _BACKEND_MODULES[name]
    if module_name is not None:
        module = importlib.import_module(module_name)
        table.update({op: getattr(module, op) for op in HOT_OPS if hasattr(module, op)})
    _table, _name = table, name


def get_backend() -> str:
    if not _name:
        set_backend(_default_backend())
    return _name


@contextlib.contextmanager
def use_backend(name: str):
    """Run a block with backend `name`, then restore the previous one (even on error)."""
    previous = get_backend()
    set_backend(name)
    try:
        yield
    finally:
        set_backend(previous)


def _default_backend() -> str:
    name = os.environ.get("NPBERT_BACKEND", "") or "numpy"
    if name not in _BACKEND_MODULES:
        raise ValueError(f"NPBERT_BACKEND={name!r} is not a backend; choose one of {', '.join(_BACKEND_MODULES)}")
    return name


def __getattr__(op: str):
    # Called for names not defined above, i.e. the hot ops: dispatch to the backend in force.
    if op in HOT_OPS:
        if not _name:
            set_backend(_default_backend())
        return _table[op]
    raise AttributeError(f"module 'npbert.backend' has no attribute {op!r}")
