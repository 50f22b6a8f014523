"""The MLM decoder and its cross-entropy, fused (kernels/decoder_cross_entropy.py) against the
unfused kernels it replaced (linear_forward, cross_entropy_forward and their backwards over the
whole (M, V) logits), alternating in one process: float32, one thread, CPU time of this thread,
best of --rounds after a warm-up; M 640 masked rows (a batch of 32 x 128 at 20 a sequence), H of
tiny (128) and mini (256), V 8,192 and 30,522; train = forward + backward, infer = forward only.
Also the matmuls' share: 2 M H V FLOPs forward, twice that backward, at this run's 2048 matmul.

    python benchmarks/decoder_loss.py
"""
from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NPBERT_NUM_THREADS"):
    os.environ[_var] = "1"                             # before NumPy loads its BLAS

import numpy as np  # noqa: E402

from npbert import kernels  # noqa: E402


def unfused(t, w, b, labels, grad):
    logits, decoder = kernels.linear_forward(t, w, b)                          # (M, V)
    _, ce = kernels.cross_entropy_forward(logits, labels)
    if grad:
        return kernels.linear_backward(kernels.cross_entropy_backward(1.0, ce), decoder)


def fused(t, w, b, labels, grad):
    _, cache = kernels.decoder_cross_entropy_forward(t, w, b, labels, grad=grad)
    if grad:
        return kernels.decoder_cross_entropy_backward(1.0, cache)


def matmul_gflops(n=2048, repeats=3):
    a, b = (np.random.default_rng(i).standard_normal((n, n)).astype(np.float32) for i in range(2))
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * n ** 3 / best / 1e9


def _timed(f):
    t0 = time.thread_time()
    f()
    return time.thread_time() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=640)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    peak = matmul_gflops()
    print(f"float32 2048 matmul: {peak:.0f} GFLOP/s (one thread, this run)")
    for H in (128, 256):
        for V in (8192, 30522):
            rng = np.random.default_rng(0)
            t = rng.standard_normal((args.rows, H)).astype(np.float32)                 # (M, H)
            w = (0.02 * rng.standard_normal((V, H))).astype(np.float32)                # (V, H)
            b, labels = np.zeros(V, np.float32), rng.integers(0, V, args.rows)
            for grad in (True, False):
                best = {"unfused": np.inf, "fused": np.inf}
                for round_ in range(args.rounds + 1):
                    for name, f in (("unfused", unfused), ("fused", fused)):
                        elapsed = _timed(lambda: f(t, w, b, labels, grad))
                        if round_:                                                     # round 0 warms up
                            best[name] = min(best[name], elapsed)
                matmuls = (3 if grad else 1) * 2 * args.rows * H * V / peak / 1e9
                print(f"H {H} V {V:6,d} {'train' if grad else 'infer'}: unfused {best['unfused'] * 1e3:6.1f} ms, "
                      f"fused {best['fused'] * 1e3:6.1f} ms ({best['unfused'] / best['fused']:.2f}x); its matmuls "
                      f"at the peak {matmuls * 1e3:6.1f} ms", flush=True)


if __name__ == "__main__":
    main()
