"""Demo 01 - the linear layer, y = x W^T + b, forward and backward.

    python demos/01_linear.py            (derivation: docs/layers/linear.md)

Every dense layer of BERT is this op. We run it on a tiny input, recompute the forward
by hand, check the three gradients against loops and against finite differences.
"""
from demo_common import arguments, ok, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import ops
from npbert.gradcheck import check


arguments(__doc__)
rng = np.random.default_rng(0)
B, T, n_in, n_out = 2, 3, 4, 5

# %% [markdown]
# > from docs/layers/linear.md: intro
# > from docs/layers/linear.md: Where it sits
# > from docs/layers/linear.md: Forward

# %%
stage("Forward. The weight has Hugging Face's (out, in) layout, so y = x @ w.T + b.")
x = rng.standard_normal((B, T, n_in))
w = rng.standard_normal((n_out, n_in))
b = rng.standard_normal(n_out)
y, cache = ops.linear_forward(x, w, b)
print(f"   x {x.shape}  w {w.shape}  b {b.shape}  ->  y {y.shape}")
print(f"   y[0, 0] = {y[0, 0]}")
by_hand = [sum(x[0, 0, i] * w[o, i] for i in range(n_in)) + b[o] for o in range(n_out)]
print(f"   by loops {np.array(by_hand)}")
ok(np.allclose(y[0, 0], by_hand), "y[0, 0, o] = sum_i x[0, 0, i] * w[o, i] + b[o], computed with loops")
ok(np.allclose(y, np.einsum("bti,oi->bto", x, w) + b), "the leading axes (B, T) are just a batch of rows")

# %% [markdown]
# > from docs/layers/linear.md: Backward

# %%
stage("Backward. Each gradient has the shape of what it is the gradient of.")
dy = rng.standard_normal(y.shape)          # pretend dL/dy came from the layer above
dx, dw, db = ops.linear_backward(dy, cache)
print(f"   dy {dy.shape}  ->  dx {dx.shape}  dw {dw.shape}  db {db.shape}")
ok(dx.shape == x.shape and dw.shape == w.shape and db.shape == b.shape, "shapes match x, w, b")
print(f"   dx[0, 0] = {dx[0, 0]}   (dy @ w)[0, 0] = {(dy @ w)[0, 0]}")
ok(np.allclose(dx, dy @ w), "dx = dy @ w        (sum over the outputs o)")
dw_loop = sum(np.outer(dy[i, t], x[i, t]) for i in range(B) for t in range(T))
print(f"   dw[0] = {dw[0]}   the loop over tokens: {dw_loop[0]}")
print(f"   db    = {db}   dy summed over tokens: {dy.sum(axis=(0, 1))}")
ok(np.allclose(dw, dw_loop), "dw = sum over all B*T tokens of outer(dy_token, x_token)")
ok(np.allclose(db, dy.sum(axis=(0, 1))), "db = dy summed over every token")

_, cache_nb = ops.linear_forward(x, w, None)
ok(ops.linear_backward(dy, cache_nb)[2] is None, "with no bias, backward returns db = None")

# %%
stage("Gradient check: central differences in float64 (npbert.gradcheck.check).")
r = check("linear", {"x": x, "w": w, "b": b},
          lambda p: ops.linear_forward(p["x"], p["w"], p["b"]),
          lambda dy, c: dict(zip(("x", "w", "b"), ops.linear_backward(dy, c))))
print("   errors:", {k: f"{v:.1e}" for k, v in r.errors.items()})
ok(r.passed, "analytic backward matches finite differences (error < 1e-6)")

# %% [markdown]
# > from docs/layers/linear.md: Numbers that must be right

# %%
stage("A TensorFlow checkpoint stores the kernel as (in, out): w = kernel.T, same y.")
kernel = w.T.copy()
ok(np.allclose(x @ kernel + b, y), "x @ kernel + b == linear_forward(x, kernel.T, b)")

print("\nall checks passed")
