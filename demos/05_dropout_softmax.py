"""Demo 05 - inverted dropout, and the softmax with its row-wise backward.

    python demos/05_dropout_softmax.py   (derivations: docs/layers/dropout.md, docs/layers/softmax.md)
    python demos/05_dropout_softmax.py --plot   (also writes 05_dropout_softmax.png, needs matplotlib)

Dropout: keep with probability 1-p, scale by 1/(1-p), so the expected value is unchanged.
Softmax: rows sum to 1, a big negative entry becomes exactly 0 (attention's padding mask),
and the backward dx = y * (dy - sum(dy * y)) has rows that sum to 0.
"""
from demo_common import arguments, ok, pyplot, show, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import ops
from npbert.gradcheck import check


args = arguments(__doc__, picture=True)
rng = np.random.default_rng(0)

# %% [markdown]
# > from docs/layers/dropout.md: intro
# > from docs/layers/dropout.md: Where it sits
# > from docs/layers/dropout.md: Forward

# %%
stage("Dropout forward, p = 0.1, on a (1000, 100) array of ones.")
p_drop = 0.1
x = np.ones((1000, 100))
y, drop = ops.dropout_forward(x, p_drop, np.random.default_rng(42))   # drop: DropoutCache(keep, scale)
print(f"   a few outputs: {y[0, :8]}")
print(f"   dropped fraction {np.mean(y == 0):.4f}, kept value {y[y != 0][0]:.6f} = 1/(1-p), mean {y.mean():.4f}")
ok(abs(np.mean(y == 0) - p_drop) < 0.005, "about p of the elements are dropped")
ok(np.allclose(y[y != 0], 1 / (1 - p_drop)), "kept elements are scaled by 1/(1-p)")
ok(abs(y.mean() - 1.0) < 0.01, "the expected value is preserved (inverted dropout)")
print(f"   cache: keep {drop.keep.shape} {drop.keep.dtype}, scale {drop.scale:.6f}")
ok(np.array_equal(y, x * drop.keep * drop.scale), "y = x * keep * scale: the cache holds what forward multiplied by")
y_again, _ = ops.dropout_forward(x, p_drop, np.random.default_rng(42))
ok(np.array_equal(y, y_again), "same seed -> bit-identical output")
_, drop32 = ops.dropout_forward(x.astype(np.float32), p_drop, np.random.default_rng(42))
ok(np.array_equal(drop32.keep, drop.keep), "float32 and float64 with the same seed drop the same elements")
y_eval, eval_cache = ops.dropout_forward(x, p_drop, None)
ok(y_eval is x and eval_cache.keep is None, "rng=None (evaluation): identity, no mask kept")

# %% [markdown]
# > from docs/layers/dropout.md: Backward

# %%
stage("Dropout backward = multiply by the same mask, keep * scale.")
dy = rng.standard_normal(x.shape)
dx = ops.dropout_backward(dy, drop)
print(f"   dy[0, :4] = {dy[0, :4]}\n   dx[0, :4] = {dx[0, :4]}   (keep[0, :4] = {drop.keep[0, :4]})")
ok(np.array_equal(dx, dy * (drop.keep * drop.scale)), "dx = dy * keep * scale")
ok(ops.dropout_backward(dy, eval_cache) is dy, "in evaluation the gradient passes through unchanged")
xs = rng.standard_normal((2, 5, 6))
r = check("dropout", {"x": xs}, lambda q: ops.dropout_forward(q["x"], 0.3, np.random.default_rng(7)),
          lambda d, c: {"x": ops.dropout_backward(d, c)})
ok(r.passed, f"gradient check with a fresh same-seed rng per call (error {r.max_error:.1e})")

# %% [markdown]
# > from docs/layers/softmax.md: intro
# > from docs/layers/softmax.md: Where it sits
# > from docs/layers/softmax.md: Forward

# %%
stage("Softmax forward over the last axis.")
s = rng.standard_normal((2, 3, 5))
probs, cache = ops.softmax_forward(s)
print(f"   scores[0, 0] = {s[0, 0]}\n   probs[0, 0]  = {probs[0, 0]}")
ok(np.allclose(probs.sum(-1), 1.0), "every row sums to 1")
ok(np.allclose(ops.softmax_forward(s + 100.0)[0], probs), "adding a constant to a row changes nothing")
big, _ = ops.softmax_forward(np.array([1000.0, 1001.0, 1002.0]))
ok(np.all(np.isfinite(big)) and np.allclose(big, ops.softmax_forward(np.array([0.0, 1.0, 2.0]))[0]),
   "no overflow for scores of 1000 (the max is subtracted first)")
masked = s[0, 0].copy()
masked[3:] += np.finfo(np.float64).min                 # what attention does to padded keys
pm, pm_cache = ops.softmax_forward(masked)
print(f"   with finfo.min added to the last two: {pm}")
ok(np.all(pm[3:] == 0.0), "exp(finfo.min - max) underflows to EXACTLY 0")
ok(np.allclose(pm[:3], ops.softmax_forward(s[0, 0, :3])[0]), "the rest is the softmax of the unmasked entries")
plt = pyplot(args)
if plt is not None:                                     # one row of scores, its softmax, and the masked softmax
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), layout="constrained")
    entries = np.arange(s.shape[-1])
    axes[0].bar(entries, s[0, 0], color="grey")
    axes[0].set(title="scores (one row)", xlabel="entry")
    axes[1].bar(entries, probs[0, 0])
    axes[1].set(title="softmax: positive, sums to 1", xlabel="entry", ylim=(0, 1))
    axes[2].bar(entries, pm, color="C1")
    axes[2].bar(entries[3:], [0.02, 0.02], color="none", edgecolor="C3", hatch="//", label="finfo.min added: exactly 0")
    axes[2].set(title="the last two masked", xlabel="entry", ylim=(0, 1))
    axes[2].legend(fontsize=8)
    show(plt, fig)

# %% [markdown]
# > from docs/layers/softmax.md: Backward

# %%
stage("Softmax backward: dx = y * (dy - sum(dy * y)).")
dy = rng.standard_normal(probs.shape)
dx = ops.softmax_backward(dy, cache)
y0 = probs[0, 0]
jacobian = np.diag(y0) - np.outer(y0, y0)               # dy_i/dx_j = y_i (delta_ij - y_j)
print(f"   dx[0, 0] = {dx[0, 0]}  (sum {dx[0, 0].sum():.1e})\n   dy[0, 0] (diag(y) - y y^T) = {jacobian.T @ dy[0, 0]}")
ok(np.allclose(dx[0, 0], jacobian.T @ dy[0, 0]), "equals dy times the full Jacobian diag(y) - y y^T")
ok(np.allclose(dx.sum(-1), 0.0, atol=1e-15), "every row of dx sums to 0 (why attention's key bias gets no gradient)")
dx_masked = ops.softmax_backward(rng.standard_normal(5), pm_cache)
print(f"   through the masked softmax above: dx = {dx_masked}")
ok(np.all(dx_masked[3:] == 0.0), "masked entries get exactly 0 gradient")
r = check("softmax", {"x": s}, lambda q: ops.softmax_forward(q["x"]),
          lambda d, c: {"x": ops.softmax_backward(d, c)})
ok(r.passed, f"gradient check (error {r.max_error:.1e})")
ones_grad = ops.softmax_backward(np.ones_like(probs), cache)
ok(np.allclose(ones_grad, 0.0), "why the checker uses a random dy: with dy = 1 the gradient is 0 and proves nothing")

print("\nall checks passed")
