"""Scratch buffers that live across calls: for intermediates that are consumed before the
call that made them returns (never cached, never returned), so one buffer per thread serves
every call and no fresh (B, A, T, T) array is mapped and page-faulted each time."""
import threading

import numpy as np

from npbert.kernels.memory import PAGE, place

_local = threading.local()


def scratch(shape, dtype, *apart_from, slot="work"):
    """An uninitialised array of this shape and dtype, the same memory on every call with
    this slot in this thread: valid only until the next call with the same slot. It is placed
    within its buffer not to 4K-alias the arrays in apart_from (see memory.py)."""
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buffers = _local.__dict__.setdefault("buffers", {})
    buf = buffers.get(slot)
    if buf is None or buf.size < n + PAGE:
        buf = buffers[slot] = np.empty(n + PAGE, np.uint8)
    return place(buf, n, apart_from).view(dtype).reshape(shape)
