"""The MLM decoder and its cross-entropy fused, forward and backward (npbert/ops/
decoder_cross_entropy.py's semantics and cache record), in tiles of BLOCK_ROWS rows by CHUNK
columns: no (M, V) array of logits or of their gradient is ever made.

For each block of rows, two parallel loops over its column chunks (each chunk's work done by
one thread start to end, threads taking chunks):
  A. logits = t W_c^T in BLAS's gemm, + b_c; per row its max, argmax, the logit at the label and
     sum exp(logit - max) without the max's own term (float64), the exps kept in the block's
     buffer for B (with no gradient wanted, a chunk-sized buffer is all there is);
  then per row, the chunks' statistics combined in chunk order: the logsumexp (log1p of the sum
     without the row max's term, as ops/cross_entropy.py) and log p(label);
  B. (training) dlogits = exp * exp(chunk max - logsumexp) / n, the label's entry
     expm1(logit - logsumexp) / n, while the chunk is in cache: db_c += its column sums,
     dW_c (+)= dlogits^T t in gemm, and its share of dt = dlogits W_c; the shares are added in
     chunk order.
So per block the logits go to memory once and come back once (the unfused pair made about
seven passes over the (M, V) logits, and mapped a fresh (M, V) gradient every step), W is read
twice, dW read and written once. The chunks, blocks and orders of every sum are fixed, so the
result does not depend on the thread count.

Log p is float64 here for every dtype (the float32 logits' exps summed in float64).
Without OpenBLAS (kernels/gemm.py) the reference runs.
"""
import math

import numpy as np
from numba import njit

from npbert.kernels.fastexp import FMA, fast_exp
from npbert.kernels.gemm import address_for as gemm_address_for
from npbert.kernels.gemm import gemm, gemm_add
from npbert.kernels.rowops import row_max, row_sum
from npbert.kernels.scratch import scratch
from npbert.kernels.threads import parallel_for
from npbert.ops.cross_entropy import IGNORE_INDEX
from npbert.ops import decoder_cross_entropy as reference
from npbert.ops.decoder_cross_entropy import DecoderCrossEntropyCache

CHUNK = 512                     # columns a tile: a (512, 512) float32 tile is 1 MB, one core's L2 here
# (the compiled loops read it from the tiles' shape: a global is frozen into the cached code)


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FMA)
def _stats(lo, hi, address, t, w, b, labels, width, tiles, chunk_max, chunk_sum, chunk_top, label_logit):
    # chunks [lo, hi) of `width` columns of this block's; t: (m, H) the block's rows; tiles: (chunks m width,)
    # flat, chunk c's (m, cw) tile at c m width, where the exps stay for the gradient, or empty: none kept;
    # chunk_*: (chunks, m)
    m, V = t.shape[0], w.shape[0]
    keep_exps = tiles.size > 0
    own = np.empty(0 if keep_exps else m * width, t.dtype)             # this part's tile, when none is kept
    for c in range(lo, hi):
        c0, c1 = c * width, min((c + 1) * width, V)
        tile = _tile(tiles, c, m, width, c1 - c0) if keep_exps else own[:m * (c1 - c0)].reshape((m, c1 - c0))
        gemm(address, t, w[c0:c1].T, tile)
        bias = b[c0:c1]
        for i in range(m):
            row = tile[i]                                               # (cw,) a view: vectorises
            top_value = add_row_max(row, bias)                          # no argmax here: its branches cost
            top = first_index(row, top_value)                           # 3x the max in 1,024-wide rows
            label = labels[i]
            if c0 <= label < c1:
                label_logit[i] = row[label - c0]
            for j in range(row.size):
                row[j] = fast_exp(row[j] - top_value)
            row[top] = 0.0                                              # the max's own term, exactly 1: left out
            chunk_sum[c, i] = row_sum(row)                              # float64
            row[top] = 1.0
            chunk_max[c, i], chunk_top[c, i] = top_value, c0 + top


@njit(cache=True, inline="always")
def add_row_max(x, y):
    """x += y, then the max of the new x (rowops.row_max): two passes over a row in L1."""
    for j in range(x.size):
        x[j] += y[j]
    return row_max(x)


@njit(cache=True, inline="always")
def first_index(x, value):
    """The first j with x[j] == value (np.argmax's tie rule), or 0 if none (value NaN). Blocks of 64
    are tested whole (a branch-free compare that vectorises) and only the block that holds it is
    scanned: 0.32 -> 0.09 ns an element of the row, against a scan that stops at each element."""
    n = x.size - x.size % 64
    for j0 in range(0, n, 64):
        hit = np.int32(0)
        for u in range(64):
            hit |= np.int32(x[j0 + u] == value)
        if hit:
            for u in range(64):
                if x[j0 + u] == value:
                    return j0 + u
    for j in range(n, x.size):
        if x[j] == value:
            return j
    return 0


@njit(nogil=True, cache=True, inline="always")
def _tile(tiles, c, m, width, cw):
    # chunk c's (m, cw) tile of the flat buffer, C-contiguous (its rows' loops vectorise; a strided
    # (m, cw) view of an (m, width) array would not)
    start = c * m * width
    return tiles[start:start + m * cw].reshape((m, cw))


@njit(nogil=True, cache=True)
def _combine(chunk_max, chunk_sum, chunk_top, label_logit, logsumexp, log_probs, predictions):
    # per row: the chunks' max, sums and argmax, in chunk order -> logsumexp, log p(label), argmax
    chunks, m = chunk_max.shape
    for i in range(m):
        best = 0
        for c in range(1, chunks):
            if chunk_max[c, i] > chunk_max[best, i]:                    # strict: the first chunk on ties
                best = c
        top = np.float64(chunk_max[best, i])
        rest = chunk_sum[best, i]                                       # the sum without the row max's term ...
        for c in range(chunks):
            if c != best:
                rest += (chunk_sum[c, i] + 1.0) * math.exp(np.float64(chunk_max[c, i]) - top)
        logsumexp[i] = top + math.log1p(rest)                           # ... so log1p keeps its digits
        log_probs[i] = np.float64(label_logit[i]) - logsumexp[i]
        predictions[i] = chunk_top[best, i]


@njit(nogil=True, cache=True, error_model="numpy")
def _gradient(lo, hi, address, t, w, labels, g, width, tiles, chunk_max, logsumexp, label_logit, first_block, dw, db,
              dt_shares):
    # chunks [lo, hi): the tiles' exps -> dlogits (in place), then db, dW and this chunk's share of dt
    m, V = t.shape[0], w.shape[0]
    factor = np.empty(1, t.dtype)                                       # a scalar in the tiles' dtype
    for c in range(lo, hi):
        c0, c1 = c * width, min((c + 1) * width, V)
        tile = _tile(tiles, c, m, width, c1 - c0)                       # (m, cw)
        column_sums = db[c0:c1]                                         # (cw,) float64
        for i in range(m):
            row = tile[i]
            factor[0] = math.exp(np.float64(chunk_max[c, i]) - logsumexp[i]) * g[i]   # p g = exp * factor
            f = factor[0]
            for j in range(row.size):
                v = row[j] * f
                row[j] = v
                column_sums[j] += v
            label = labels[i]
            if c0 <= label < c1:                                        # (p - 1) g, without p - 1's cancellation
                k = label - c0
                before = row[k]
                row[k] = math.expm1(np.float64(label_logit[i]) - logsumexp[i]) * g[i]
                column_sums[k] += np.float64(row[k]) - np.float64(before)
        if first_block:
            gemm(address, tile.T, t, dw[c0:c1])                         # (cw, H) dW_c = dlogits^T t
        else:
            gemm_add(address, tile.T, t, dw[c0:c1])
        gemm(address, tile, w[c0:c1], dt_shares[c])                     # (m, H)


@njit(nogil=True, cache=True)
def _sum_shares(shares, out):
    # out (m, H) = sum over chunks of shares (chunks, m, H), in chunk order; element loops, not
    # `out += shares[c]`: Numba's broadcasting in-place add compiled its error-message string code (~2.5 s)
    for i in range(out.shape[0]):
        row = out[i]
        first = shares[0, i]
        for j in range(row.size):
            row[j] = first[j]
        for c in range(1, shares.shape[0]):
            share = shares[c, i]
            for j in range(row.size):
                row[j] += share[j]


def _block_stats(address, t, w, b, labels, keep_exps):
    """Pass A and the combination over one block of rows -> (tiles, chunk_max, logsumexp, label_logit,
    log_probs, predictions)."""
    m, V = t.shape[0], w.shape[0]
    chunks = -(-V // CHUNK)
    tiles = scratch((chunks * m * CHUNK if keep_exps else 0,), t.dtype, t, w, slot="decoder")
    chunk_max = np.empty((chunks, m), t.dtype)
    chunk_sum = np.empty((chunks, m))
    chunk_top = np.empty((chunks, m), np.int64)
    label_logit = np.zeros(m, t.dtype)
    parallel_for(_stats, chunks, address, t, w, b, labels, CHUNK, tiles, chunk_max, chunk_sum, chunk_top,
                 label_logit)
    logsumexp, log_probs, predictions = np.empty(m), np.empty(m), np.empty(m, np.int64)
    _combine(chunk_max, chunk_sum, chunk_top, label_logit, logsumexp, log_probs, predictions)
    return tiles, chunk_max, logsumexp, label_logit, log_probs, predictions


def decoder_stats(t, w, b, targets, grad_scale=None):
    """-> (log p(target) (M,) float64, predictions (M,), and with grad_scale ((M,): each row's dloss
    factor) the gradients dt, dw, db); None when OpenBLAS cannot run it (the caller uses the reference)."""
    t, w, b = (np.ascontiguousarray(x) for x in (t, w, b))
    address = gemm_address_for(t, w)
    if not address or b.dtype != t.dtype:
        return None
    M, (V, H) = len(t), w.shape
    targets = np.ascontiguousarray(targets, dtype=np.int64)
    log_probs, predictions = np.empty(M), np.empty(M, np.int64)
    grad = grad_scale is not None
    if grad:
        dt, dw, db_sum = np.empty_like(t), np.empty_like(w), np.zeros(V)
    chunks = -(-V // CHUNK)
    for k, rows in enumerate(reference.row_blocks(M)):
        tiles, chunk_max, lse, label_logit, log_probs[rows], predictions[rows] = _block_stats(
            address, t[rows], w, b, targets[rows], grad)
        if grad:
            shares = np.empty((chunks, rows.stop - rows.start, H), t.dtype)
            parallel_for(_gradient, chunks, address, t[rows], w, targets[rows], grad_scale[rows], CHUNK, tiles,
                         chunk_max, lse, label_logit, k == 0, dw, db_sum, shares)
            _sum_shares(shares, dt[rows])
    if grad and M == 0:
        dw[:] = 0
    return (log_probs, predictions) + ((dt, dw, db_sum.astype(t.dtype)) if grad else ())


def decoder_cross_entropy_forward(t, w, b, labels, ignore_index=IGNORE_INDEX, grad=True):
    # t: (M, H), w: (V, H), b: (V,), labels: (M,) integer -> loss, cache (grad=False: no gradient kept)
    counted = labels != ignore_index                                 # (M,)
    n = max(int(counted.sum()), 1)
    safe = np.where(counted, labels, 0)                              # (M,) ignored rows read class 0
    stats = decoder_stats(t, w, b, safe, (counted / n) if grad else None)
    if stats is None:
        return reference.decoder_cross_entropy_forward(t, w, b, labels, ignore_index, grad)
    log_probs, predictions, *grads = stats
    loss = -(log_probs * counted).sum() / n
    return t.dtype.type(loss), DecoderCrossEntropyCache(*(grads or (None, None, None)), predictions)


decoder_cross_entropy_backward = reference.decoder_cross_entropy_backward   # the gradients are made in forward


def decoder_log_softmax_at(t, w, b, targets):
    # t: (M, H), w: (V, H), b: (V,), targets: (M,) -> (M,) float64 log p(target | row)
    stats = decoder_stats(t, w, b, targets)
    return reference.decoder_log_softmax_at(t, w, b, targets) if stats is None else stats[0]
