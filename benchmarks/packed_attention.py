"""Packed attention's forward and backward (npbert/kernels/packed_attention.py) against the
reference (npbert/ops/packed_attention.py) and the padded attention core kernel
(npbert/kernels/attention_core.py) on the same batch: B sequences of lengths uniform in
[T/2, T], every row a query, attention dropout 0.1, float32, one thread, CPU time of this
thread, best of --repeats. Dropout's uniforms are counter-based (ops/dropout.py): each
implementation computes those of the weights it has, inside its forward (one key a call).

    python benchmarks/packed_attention.py
"""
from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NPBERT_NUM_THREADS"):
    os.environ[_var] = "1"                             # before NumPy loads its BLAS

import numpy as np  # noqa: E402

from npbert import kernels, ops  # noqa: E402
from npbert.ops.packed_attention import AttentionLayout  # noqa: E402

PRESETS = {"tiny": (128, 2), "small": (512, 8)}        # name -> (H, A)


def best(f, repeats):
    f()
    times = []
    for _ in range(repeats):
        t0 = time.thread_time()
        f()
        times.append(time.thread_time() - t0)
    return min(times)


def problem(B, T, H, A, seed=0):
    """A padded (B, A, T, D) batch, its packed (N, H) rows, the layout and the mask bias."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(T // 2, T + 1, B)                                      # (B,)
    mask = np.arange(T)[None, :] < lengths[:, None]                               # (B, T)
    x = [rng.standard_normal((B, T, H)).astype(np.float32) for _ in range(4)]    # q, k, v, dcontext
    padded = [ops.split_heads(t, A) for t in x]                                   # (B, A, T, D) each
    packed = [np.ascontiguousarray(t[mask]) for t in x]                           # (N, H) each
    positions = np.nonzero(mask)[1]                                               # (N,)
    layout = AttentionLayout(lengths, lengths, positions, positions, T)
    return padded, packed, layout, ops.attention_mask_bias(mask, np.float32)


def measure(name, B, T, p_drop, repeats):
    H, A = PRESETS[name]
    (q, k, v, dc), (pq, pk, pv, pdc), layout, bias = problem(B, T, H, A)
    key = 0x5EED                                                                  # one dropout call's key
    dc = np.ascontiguousarray(dc)
    rows = {}
    for impl, forward, backward in (("kernel", kernels.packed_attention_forward, kernels.packed_attention_backward),
                                    ("reference", ops.packed_attention_forward, ops.packed_attention_backward)):
        cache = forward(pq, pk, pv, layout, A, p_drop, key)[1]
        rows[impl] = (best(lambda: forward(pq, pk, pv, layout, A, p_drop, key), repeats),
                      best(lambda: backward(pdc, cache), repeats))
    rng = np.random.default_rng(1)
    cache = kernels.attention_core_forward(q, k, v, bias, p_drop, rng)[1]
    rows["padded kernel"] = (best(lambda: kernels.attention_core_forward(q, k, v, bias, p_drop, rng), repeats),
                             best(lambda: kernels.attention_core_backward(dc, cache), repeats))
    print(f"{name} (H {H}, A {A}), B {B}, T {T}, {len(pq)} of {B * T} rows real, dropout {p_drop}, float32, 1 thread")
    for impl, (f, b) in rows.items():
        print(f"  {impl:14s} forward {f * 1e3:7.2f} ms  backward {b * 1e3:7.2f} ms")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    for name in PRESETS:
        measure(name, args.batch, args.seq_len, args.dropout, args.repeats)


if __name__ == "__main__":
    main()
