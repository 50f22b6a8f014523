"""Linear then GELU, y = gelu(x W^T + b), with the bias add and the bias gradient done row by row
next to GELU's own passes.

The matmuls stay in BLAS, split over npbert's threads by kernels/linear.py (docs/performance.md, "the matmul choice").
What is fused is what lies between them, each a pass over the (N, out) intermediate:
- forward: x W^T without bias, then per row: add b in place (the pre-activation is what
  backward needs, so it is kept) and write gelu of it while the row is in cache: the
  reference's separate `y += b` pass over the whole (N, out) array is gone.
- backward: per row, dpre = dy * gelu'(pre) and the bias gradient summed while the row is in
  cache, then dx and dW in BLAS: the reference's `dy.sum(axis=0)` pass is gone.
db is summed in float64 per fixed chunk of rows and then over chunks in order, as LayerNorm's
dgamma/dbeta, so it does not depend on the number of threads. The GELU passes are gelu.py's.
The cache is the reference's record, field for field (its linear part has_bias=True, as the bias
was added): backward asks the matmuls for no db, which it has summed itself.
"""
import numpy as np
from numba import njit

from npbert.kernels.gelu import GRAIN, pass_args
from npbert.kernels.gelu import backward_pass as gelu_backward_pass
from npbert.kernels.gelu import forward_pass as gelu_forward_pass
from npbert.kernels.layernorm import ROWS_PER_CHUNK
from npbert.kernels.linear import linear_backward, linear_forward
from npbert.kernels.memory import empty_apart
from npbert.kernels.threads import parallel_for
from npbert.ops.linear_gelu import LinearGeluCache


@njit(nogil=True, cache=True, error_model="numpy")
def _forward(lo, hi, pre, b, y, form, sqrt_half, inv_sqrt_2pi, sqrt_2_pi, k, half, one, three):
    # pre, y: (N, out), pre holds x W^T and gets + b; b: (out,)
    for i in range(lo, hi):
        p = pre[i]                                     # (out,)
        for j in range(p.size):
            p[j] += b[j]                               # the pre-activation, kept for backward
        gelu_forward_pass(0, p.size, p, y[i], form, sqrt_half, inv_sqrt_2pi, sqrt_2_pi, k, half, one, three)


@njit(nogil=True, cache=True, error_model="numpy")
def _backward(lo, hi, dy, pre, dpre, db_parts, form, sqrt_half, inv_sqrt_2pi, sqrt_2_pi, k, half, one, three):
    # dy, pre, dpre: (N, out); db_parts: (chunks, out) float64, zeroed
    N = pre.shape[0]
    for c in range(lo, hi):
        acc = db_parts[c]                              # (out,) float64: one lane per column
        for i in range(c * ROWS_PER_CHUNK, min(N, (c + 1) * ROWS_PER_CHUNK)):
            d = dpre[i]                                # (out,) = dy[i] * gelu'(pre[i]): gelu.py's pass
            gelu_backward_pass(0, d.size, dy[i], pre[i], d, form, sqrt_half, inv_sqrt_2pi, sqrt_2_pi, k, half, one,
                               three)
            for j in range(d.size):                    # a loop of its own: inside the one above, the
                acc[j] += d[j]                         # float64 sum made it 7.5 ms, not 5.0 (tiny's FFN)


def linear_gelu_forward(x, w, b, hidden_act):
    # x: (..., in), w: (out, in), b: (out,)
    pre, lin_cache = linear_forward(x, w, None)        # (..., out) = x W^T, in BLAS; lin_cache: no bias
    pre2 = pre.reshape(-1, w.shape[0])                 # (N, out), a view: matmul's output is contiguous
    y = empty_apart(pre.shape, pre.dtype, pre)         # (..., out)
    rows = max(1, GRAIN // max(pre2.shape[1], 1))      # a thread's part: GRAIN elements at least
    parallel_for(_forward, len(pre2), pre2, b.astype(pre.dtype, copy=False), y.reshape(pre2.shape),
                 *pass_args(hidden_act, pre.dtype), grain=rows)
    return y, LinearGeluCache(lin_cache._replace(has_bias=True), pre, hidden_act)  # the reference's record


def linear_gelu_backward(dy, cache: LinearGeluCache):
    # dy: (..., out)
    lin_cache, hidden_act = cache.linear, cache.hidden_act
    pre2 = cache.pre.reshape(-1, cache.pre.shape[-1])  # (N, out)
    N, out = pre2.shape
    chunks = -(-N // ROWS_PER_CHUNK)
    dy2 = np.ascontiguousarray(dy).reshape(N, out)     # (N, out)
    dpre = empty_apart(dy.shape, pre2.dtype, pre2, dy2)  # (..., out)
    db_parts = np.zeros((chunks, out))                 # (chunks, out) float64
    parallel_for(_backward, chunks, dy2, pre2, dpre.reshape(N, out), db_parts,
                 *pass_args(hidden_act, pre2.dtype))
    dx, dw, _ = linear_backward(dpre, lin_cache._replace(has_bias=False))  # dx: (..., in), dw: (out, in); db is above
    return dx, dw, db_parts.sum(axis=0).astype(pre2.dtype)  # db: (out,), chunks added in a fixed order
