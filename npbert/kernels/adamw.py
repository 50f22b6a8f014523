"""The AdamW update as one elementwise pass (split over threads) instead of the reference's
~8 NumPy passes over p, g, m, v and their temporaries: the step is memory-bound, so reading
each array once and writing p, m, v once is the whole gain.

Same operations in the same order as npbert.ops.adamw, each rounded to p's dtype (constants
are scalars of that dtype, as in gelu.py; np.sqrt of a float32 stays float32), and no
fastmath, so LLVM may not contract a multiply-add into an FMA: the result is bit-identical
to the reference (tests/kernels/test_each_kernel.py checks it).
"""
import numpy as np
from numba import njit

from npbert.kernels.threads import parallel_for

GRAIN = 16384                                          # elements: below this one thread is faster


@njit(nogil=True, cache=True, error_model="numpy")
def _update(lo, hi, p, g, m, v, b1, one_minus_b1, b2, one_minus_b2, decay, sqrt_c2, eps, lr_c1):
    # p, g, m, v: (N,) flat
    p, g, m, v = p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi]   # index from 0: see threads.py
    for i in range(p.size):
        gi = g[i]
        mi = m[i] * b1 + one_minus_b1 * gi
        vi = v[i] * b2 + one_minus_b2 * (gi * gi)
        m[i] = mi
        v[i] = vi
        # decay is exactly 1 when the reference skips its multiply, and x * 1 == x
        pi = p[i] * decay
        p[i] = pi - lr_c1 * mi / (np.sqrt(vi) / sqrt_c2 + eps)


def adamw_update(p, g, m, v, lr, b1, b2, eps, c1, c2, weight_decay):
    # p, g, m, v: (...) same shape and dtype; p, m, v are updated in place
    for name, a in (("p", p), ("m", m), ("v", v)):
        if not a.flags.c_contiguous:                   # reshape(-1) would copy: we would update the copy
            raise ValueError(f"adamw_update: {name} must be C-contiguous to be updated in place")
        if a.shape != p.shape or a.dtype != p.dtype:
            raise ValueError(f"adamw_update: {name} is {a.dtype}{a.shape}, p is {p.dtype}{p.shape}")
    if g.shape != p.shape or g.dtype != p.dtype:
        raise ValueError(f"adamw_update: g is {g.dtype}{g.shape}, p is {p.dtype}{p.shape}")
    dt = p.dtype.type
    decay = dt(1.0 - lr * weight_decay) if weight_decay else dt(1.0)
    parallel_for(_update, p.size, p.reshape(-1), np.ascontiguousarray(g).reshape(-1), m.reshape(-1),
                 v.reshape(-1), dt(b1), dt(1.0 - b1), dt(b2), dt(1.0 - b2), decay, dt(np.sqrt(c2)), dt(eps),
                 dt(lr / c1), grain=GRAIN)
