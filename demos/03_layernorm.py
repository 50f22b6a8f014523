"""Demo 03 - LayerNorm: normalise each token's features, then scale and shift.

    python demos/03_layernorm.py         (derivation: docs/layers/layernorm.md)
    python demos/03_layernorm.py --plot  (also writes 03_layernorm.png, if matplotlib is installed)

We check the forward's defining property (mean 0, variance 1 per row), compare the compact
backward formula with the full Jacobian built term by term, and run the gradient check.
"""
from demo_common import arguments, ok, pyplot, show, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import ops
from npbert.gradcheck import check, numerical_gradient


args = arguments(__doc__, picture=True)
rng = np.random.default_rng(0)
B, T, H = 2, 4, 8
EPS = 1e-12                                     # BERT's layer_norm_eps

# %% [markdown]
# > from docs/layers/layernorm.md: intro
# > from docs/layers/layernorm.md: Where it sits
# > from docs/layers/layernorm.md: Forward

# %%
stage("Forward with gamma = 1, beta = 0 (BERT's initialisation).")
x = 5.0 + 3.0 * rng.standard_normal((B, T, H))  # rows far from mean 0 / variance 1
y, _ = ops.layernorm_forward(x, np.ones(H), np.zeros(H), EPS)
print(f"   x {x.shape}: row means {x.mean(-1)[0]}")
print(f"   y {y.shape}: row means {y.mean(-1)[0]}, row variances {y.var(-1)[0]}")
ok(np.allclose(y.mean(-1), 0.0, atol=1e-12), "every row of y has mean 0")
ok(np.allclose(y.var(-1), 1.0, atol=1e-9), "every row of y has (biased) variance 1")
y2, _ = ops.layernorm_forward(2.0 * x + 7.0, np.ones(H), np.zeros(H), EPS)
ok(np.allclose(y2, y), "shifting or scaling a row does not change its output")

# %% [markdown]
# > from docs/layers/layernorm.md: Numbers that must be right

# %%
stage("eps matters: BERT's 1e-12, not PyTorch's default 1e-5, on a row with small spread.")
quiet = 1.0 + 0.003 * rng.standard_normal(H)    # variance ~1e-5
y_bert, _ = ops.layernorm_forward(quiet, np.ones(H), np.zeros(H), 1e-12)
y_torch, _ = ops.layernorm_forward(quiet, np.ones(H), np.zeros(H), 1e-5)
print(f"   max |difference| = {np.abs(y_bert - y_torch).max():.3f}")
ok(np.abs(y_bert - y_torch).max() > 0.1, "eps 1e-5 would give a visibly different output")
flat, _ = ops.layernorm_forward(np.full(H, 3.0), np.ones(H), np.full(H, 0.5), EPS)
print(f"   a row of 3.0s with beta = 0.5 -> {flat}")
ok(np.all(flat == 0.5), "a constant row gives y = beta (no division by zero)")
plt = pyplot(args)
if plt is not None:                             # each token's features before and after; the quiet row under both eps
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    rows = x.reshape(-1, H)                     # (B*T, H): one row per token
    for i, (row, out) in enumerate(zip(rows, y.reshape(-1, H))):
        left.plot(row, np.full(H, i + 0.15), "o", color="grey", ms=4, label="x (input)" if i == 0 else None)
        left.plot(out, np.full(H, i - 0.15), "o", color="C0", ms=4, label="y = LayerNorm(x)" if i == 0 else None)
    left.axvline(0, color="k", lw=0.5)
    left.set(xlabel="feature value", ylabel="token (row)", title="each row: mean 0, variance 1 after")
    right.plot(quiet - quiet.mean(), "o-", color="grey", label="x - mean (variance ~1e-5)")
    right.plot(y_bert, "o-", label="eps 1e-12 (BERT)")
    right.plot(y_torch, "s--", label="eps 1e-5 (PyTorch's default)")
    right.set(xlabel="feature", title="a quiet row: eps decides its scale")
    for ax in (left, right):
        ax.legend(fontsize=8), ax.grid(True, alpha=0.3)
    show(plt, fig)

# %% [markdown]
# > from docs/layers/layernorm.md: Backward

# %%
stage("Backward, with non-trivial gamma and beta.")
gamma, beta = 1.0 + 0.3 * rng.standard_normal(H), 0.1 * rng.standard_normal(H)
y, cache = ops.layernorm_forward(x, gamma, beta, EPS)
xhat, rstd = cache.xhat, cache.rstd           # LayerNormCache: what backward needs
dy = rng.standard_normal(y.shape)
dx, dgamma, dbeta = ops.layernorm_backward(dy, cache)
print(f"   cache: xhat {xhat.shape}, rstd {rstd.shape}, gamma {gamma.shape}")
print(f"   dx {dx.shape}  dgamma {dgamma.shape}  dbeta {dbeta.shape}")
print(f"   dgamma = {dgamma}\n   sum(dy * xhat) = {(dy * xhat).sum(axis=(0, 1))}")
ok(np.allclose(dgamma, (dy * xhat).sum(axis=(0, 1))) and np.allclose(dbeta, dy.sum(axis=(0, 1))),
   "dgamma = sum(dy * xhat), dbeta = sum(dy) over all tokens")

# The full Jacobian of one row, from the derivation: d xhat_i / d x_j = rstd (delta_ij - 1/H - xhat_i xhat_j / H)
r0, xh = rstd[0, 0, 0], xhat[0, 0]
J = r0 * (np.eye(H) - 1.0 / H - np.outer(xh, xh) / H)          # (H, H)
dxhat = dy[0, 0] * gamma
print(f"   dx[0, 0] = {dx[0, 0]}\n   J^T dxhat = {J.T @ dxhat}")
ok(np.allclose(dx[0, 0], J.T @ dxhat), "compact formula == dxhat contracted with the full Jacobian")
row = x[0, 0].copy()
J_num = np.stack([numerical_gradient(lambda: ops.layernorm_forward(row, np.ones(H), np.zeros(H), EPS)[0][i], row)
                  for i in range(H)])                           # row i: d xhat_i / d x
print(f"   max |J - J by finite differences| = {np.abs(J - J_num).max():.1e}")
ok(np.allclose(J, J_num, atol=1e-8), "...and that Jacobian matches finite differences")
print(f"   row sums of dx {dx.sum(-1)[0]}, dx . xhat per row {(dx * xhat).sum(-1)[0]}")
ok(np.allclose(dx.sum(-1), 0.0, atol=1e-12), "each row of dx sums to 0 (shift invariance)")
ok(np.allclose((dx * xhat).sum(-1), 0.0, atol=1e-9), "each row of dx is orthogonal to xhat (scale invariance)")

# %%
stage("Gradient check (finite differences, float64).")
r = check("layernorm", {"x": x, "gamma": gamma, "beta": beta},
          lambda p: ops.layernorm_forward(p["x"], p["gamma"], p["beta"], EPS),
          lambda d, c: dict(zip(("x", "gamma", "beta"), ops.layernorm_backward(d, c))))
print("   errors:", {k: f"{v:.1e}" for k, v in r.errors.items()})
ok(r.passed, "dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) is right")

print("\nall checks passed")
