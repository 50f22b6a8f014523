"""Demo 04 - GELU, exact (erf) and tanh forms, and their derivatives.

    python demos/04_gelu.py              (derivation: docs/layers/gelu.md)
    python demos/04_gelu.py --plot       (also writes gelu.png, if matplotlib is installed)

BERT uses the exact form (hidden_act="gelu"). The tanh form ("gelu_new") is close but not
equal, and forward and backward must use the same one: we show what happens if they don't.
"""
import math

from demo_common import arguments, exit_with, ok, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import ops
from npbert.errors import NpbertError
from npbert.gradcheck import check
from npbert.ops.erf import erf
from npbert.plotting import MISSING_NOTE, check_png_path, load_pyplot, save_png

args = arguments(__doc__, lambda p: p.add_argument("--plot", action="store_true",
                                                   help="also write gelu.png (needs matplotlib)"))
PICTURE = "gelu.png"
if args.plot:
    try:
        check_png_path(PICTURE)               # before any work: a gelu.png npbert did not draw is kept
    except NpbertError as e:
        exit_with(e)
rng = np.random.default_rng(0)

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

# %%
stage("A picture: x from -3 to 3 across, gelu(x) from 3 down to 0 in steps of 0.5 ('-' is y = 0).")
cols = np.linspace(-3, 3, 49)
vals, _ = ops.gelu_forward(cols)
for level in np.arange(3.0, -0.5, -0.5):
    print("   " + "".join("*" if abs(v - level) < 0.25 else ("-" if abs(level) < 0.01 else " ") for v in vals))
if args.plot:
    plt = load_pyplot()
    if plt is None:
        print(f"   {MISSING_NOTE}")
    else:
        fig, ax = plt.subplots()
        ax.plot(grid, g_exact, label="gelu (exact)")
        ax.plot(grid, g_tanh, "--", label="gelu_new (tanh)")
        ax.set_xlim(-4, 4), ax.set_ylim(-0.5, 4), ax.legend(), ax.grid(True)
        save_png(plt, fig, PICTURE)
        print(f"   wrote {PICTURE}")

print("\nall checks passed")
