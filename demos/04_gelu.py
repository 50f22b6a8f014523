"""Demo 04 - GELU, exact (erf) and tanh forms, and their derivatives.

    python demos/04_gelu.py              (derivation: docs/layers/gelu.md)
    python demos/04_gelu.py --plot       (also writes 04_gelu.png, if matplotlib is installed)

BERT uses the exact form (hidden_act="gelu"). The tanh form ("gelu_new") is close but not
equal, and forward and backward must use the same one: we show what happens if they don't.
"""
import math

from demo_common import arguments, ok, pyplot, show, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import ops
from npbert.gradcheck import check
from npbert.ops.erf import erf

args = arguments(__doc__, picture=True)
rng = np.random.default_rng(0)

# %% [markdown]
# > from docs/layers/gelu.md: intro
# > from docs/layers/gelu.md: Where it sits in BERT
# > from docs/layers/gelu.md: Forward

# %%
stage("A few values.  gelu(x) = x * Phi(x), Phi the standard normal CDF.")
xs = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0])
exact, c_exact = ops.gelu_forward(xs, "gelu")
tanh_, c_tanh = ops.gelu_forward(xs, "gelu_new")
print("        x     exact      tanh     d/dx exact")
for x, e, t, d in zip(xs, exact, tanh_, ops.gelu_backward(np.ones_like(xs), c_exact)):
    print(f"   {x:6.2f}  {e:8.5f}  {t:8.5f}  {d:8.5f}")
ok(all(erf(np.array([v]))[0] == math.erf(v) for v in xs / math.sqrt(2)), "npbert's erf is C's erf, bit for bit")
ok(exact[3] == 0.0, "gelu(0) = 0")
ok(ops.gelu_backward(np.array([1.0]), ops.gelu_forward(np.array([0.0]))[1])[0] == 0.5, "gelu'(0) = 1/2")

# %%
stage("The shape of the curve, on a fine grid.")
grid = np.linspace(-8.0, 8.0, 160001)
g_exact, _ = ops.gelu_forward(grid, "gelu")
g_tanh, _ = ops.gelu_forward(grid, "gelu_new")
i = g_exact.argmin()
print(f"   minimum {g_exact[i]:.4f} at x = {grid[i]:.3f}")
ok(abs(g_exact[i] + 0.170) < 1e-3 and abs(grid[i] + 0.752) < 1e-3, "minimum about -0.170 near x = -0.752")
ok(np.allclose(g_exact[grid > 6], grid[grid > 6]) and np.allclose(g_exact[grid < -6], 0.0),
   "gelu(x) -> x for large x, -> 0 for very negative x")
ok(np.allclose(g_exact - g_exact[::-1], grid), "gelu(x) - gelu(-x) = x")
diff = np.abs(g_exact - g_tanh)
print(f"   max |exact - tanh| = {diff.max():.2e} at x = {grid[diff.argmax()]:+.2f}")
ok(1e-4 < diff.max() < 1e-3, "the two forms differ by less than 1e-3 - but they do differ")

# %% [markdown]
# > from docs/layers/gelu.md: Backward

# %%
stage("Gradient check of both forms (finite differences, float64).")
x = 2.0 * rng.standard_normal((2, 5, 7))
for act in ("gelu", "gelu_new"):
    r = check(act, {"x": x}, lambda p, a=act: ops.gelu_forward(p["x"], a),
              lambda d, c: {"x": ops.gelu_backward(d, c)})
    ok(r.passed, f"{act:8s} backward matches finite differences (error {r.max_error:.1e})")

# %%
stage("Mixing the formulas: tanh forward with the exact derivative.")
r = check("mixed", {"x": x}, lambda p: ops.gelu_forward(p["x"], "gelu_new"),
          lambda d, c: {"x": ops.gelu_backward(d, c._replace(hidden_act="gelu"))})   # c: a GeluCache
print(f"   error {r.max_error:.1e}")
ok(not r.passed, "the gradient check catches it: forward and backward must use the same GELU")

# %% [markdown]
# > from docs/layers/gelu.md: Numbers that must be right

# %%
stage("A picture: x from -3 to 3 across, gelu(x) from 3 down to 0 in steps of 0.5 ('-' is y = 0).")
cols = np.linspace(-3, 3, 49)
vals, _ = ops.gelu_forward(cols)
for level in np.arange(3.0, -0.5, -0.5):
    print("   " + "".join("*" if abs(v - level) < 0.25 else ("-" if abs(level) < 0.01 else " ") for v in vals))
plt = pyplot(args)
if plt is not None:                           # the curves, their derivatives, and how far apart the two forms are
    d_exact = ops.gelu_backward(np.ones_like(grid), ops.gelu_forward(grid, "gelu")[1])
    d_tanh = ops.gelu_backward(np.ones_like(grid), ops.gelu_forward(grid, "gelu_new")[1])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    left.plot(grid, g_exact, label="gelu (exact)")
    left.plot(grid, g_tanh, "--", label="gelu_new (tanh)")
    left.plot(grid, d_exact, label="d/dx gelu")
    left.plot(grid, np.maximum(grid, 0), ":", color="grey", label="relu, for comparison")
    left.set(xlim=(-4, 4), ylim=(-0.5, 3), xlabel="x", title="GELU and its derivative")
    right.plot(grid, 1e4 * (g_tanh - g_exact), label="gelu_new - gelu")
    right.plot(grid, 1e4 * (d_tanh - d_exact), label="their derivatives' difference")
    right.set(xlim=(-6, 6), xlabel="x", ylabel="x 1e-4", title="tanh form minus exact form")
    for ax in (left, right):
        ax.legend(fontsize=8), ax.grid(True)
    show(plt, fig)

print("\nall checks passed")
