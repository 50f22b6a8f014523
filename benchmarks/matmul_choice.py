"""The measurement behind the numba backend's matmul choice (docs/performance.md):
for the linear layers' shapes, NumPy's BLAS on the (B, T, in) input as the reference calls
it, on the input flattened to (B*T, in), and a cache-blocked Numba kernel (np.dot inside
njit would need SciPy, which is not a dependency). float32, 2 threads, best of --repeats.

    python benchmarks/matmul_choice.py
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
from numba import njit, prange

SHAPES = [  # (name, B, T, in, out) as in a training step at batch x 128 tokens
    ("tiny qkvo", 32, 128, 128, 128), ("tiny ffn up", 32, 128, 128, 512),
    ("small qkvo", 16, 128, 512, 512), ("small ffn up", 16, 128, 512, 2048),
    ("tiny MLM decoder", 1, 640, 128, 30522),
]
BLOCK = 64


@njit(parallel=True, cache=True, error_model="numpy")
def blocked_matmul_t(x, w, y):
    # y = x @ w.T; x: (N, K), w: (M, K), y: (N, M); tiles of BLOCK rows of x and of w
    N, K = x.shape
    M = w.shape[0]
    wt = np.ascontiguousarray(w.T)                     # (K, M): the inner loop runs along M
    for bi in prange((N + BLOCK - 1) // BLOCK):
        for bj in range(0, M, BLOCK):
            for i in range(bi * BLOCK, min(N, (bi + 1) * BLOCK)):
                for j in range(bj, min(M, bj + BLOCK)):
                    y[i, j] = 0
                for k in range(K):
                    a = x[i, k]
                    for j in range(bj, min(M, bj + BLOCK)):
                        y[i, j] += a * wt[k, j]


def best(f, repeats):
    f()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    for name, B, T, k, m in SHAPES:
        x = rng.standard_normal((B, T, k)).astype(np.float32)
        w = rng.standard_normal((m, k)).astype(np.float32)
        x2, y = x.reshape(-1, k), np.empty((B * T, m), np.float32)
        flops = 2 * B * T * k * m
        rec = dict(shape=name, m=B * T, k=k, n=m)
        for impl, f in (("numpy_3d", lambda: x @ w.T), ("numpy_2d", lambda: x2 @ w.T),
                        ("numba_blocked", lambda: blocked_matmul_t(x2, w, y))):
            rec[impl + "_gflops"] = round(flops / best(f, args.repeats) / 1e9, 1)
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
