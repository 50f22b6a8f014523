"""Demo 06 - multi-head self-attention with a padding mask.

    python demos/06_attention.py         (derivation: docs/layers/attention.md)
    python demos/06_attention.py --plot  (also writes 06_attention.png, if matplotlib is installed)

The attention core (scores -> softmax -> dropout -> weighted sum of values) against a
hand-written loop, padded keys getting exactly zero probability and zero gradient, the key
bias getting no gradient at all, and the whole multi-head block against a per-head loop.
"""
import math
from demo_common import arguments, ok, pyplot, show, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import ops
from npbert.gradcheck import check
from npbert.layers.attention import self_attention_backward, self_attention_forward
from npbert.layers.layout import Padded
from npbert.plotting import attention_heads


args = arguments(__doc__, picture=True)
rng = np.random.default_rng(0)
B, T, A, D = 2, 5, 2, 3                      # batch, tokens, heads, head size
H = A * D

# %% [markdown]
# > from docs/layers/attention.md: intro
# > from docs/layers/attention.md: Where it sits
# > from docs/layers/attention.md: The padding mask

# %%
stage("The padding mask becomes an additive bias on the keys.")
attention_mask = np.array([[1, 1, 1, 0, 0],   # sequence 0: 3 real tokens, 2 padding
                           [1, 1, 1, 1, 1]])
mask_bias = ops.attention_mask_bias(attention_mask, np.float64)
print(f"   attention_mask[0] = {attention_mask[0]}  ->  mask_bias[0] = {mask_bias[0]}")
ok(mask_bias[0, 3] == np.finfo(np.float64).min, "padding gets finfo(float64).min, real tokens 0")

# %% [markdown]
# > from docs/layers/attention.md: Forward

# %%
stage("The attention core: q, k, v of shape (B, A, T, D).")
q, k, v = (rng.standard_normal((B, A, T, D)) for _ in range(3))
context, cache = ops.attention_core_forward(q, k, v, mask_bias, 0.0, None)
probs = cache.probs                          # AttentionCoreCache: q, k, v, probs, ...
print(f"   scores/probs (B, A, T, T) = {probs.shape}, context {context.shape}, scale = 1/sqrt({D})")
before = (q @ k.swapaxes(-1, -2)) / math.sqrt(D)        # (B, A, T, T)
scores, _ = ops.attention_scores(q, k, mask_bias)      # the same plus mask_bias, as the core computes them
print(f"   scores[0, 0] = q k^T / sqrt(D) before the mask (queries x keys):\n{before[0, 0]}")
shown = np.where(scores[0, 0] < -1e300, -np.inf, scores[0, 0])    # finfo.min would print as -1.7977e+308
print(f"   after adding mask_bias[0] (finfo.min shown as -inf):\n{shown}")
ok(np.allclose(scores[0, :, :, :3], before[0, :, :, :3]) and np.all(scores[0, :, :, 3:] == np.finfo(np.float64).min),
   "real keys keep their scores; a padded key's is finfo.min (a score of a few units is lost in its rounding)")
print(f"   probs[0, 0] = softmax of each row:\n{probs[0, 0]}")
ok(np.allclose(probs.sum(-1), 1.0), "each query's probabilities over the keys sum to 1")
ok(np.all(probs[0, :, :, 3:] == 0.0), "padded keys get probability EXACTLY 0 (exp underflows)")
plt = pyplot(args)
if plt is not None:                          # sequence 0's heads: its padded keys (columns 3, 4) stay dark
    labels = [f"{t}" + (" pad" if not attention_mask[0, t] else "") for t in range(T)]
    show(plt, attention_heads(plt, probs[0], labels, labels, "sequence 0: each head's probabilities"))

loop = np.zeros_like(context)                # the textbook version, one query at a time
for b in range(B):
    for a in range(A):
        for i in range(T):
            s = [q[b, a, i] @ k[b, a, j] / math.sqrt(D) if attention_mask[b, j] else -math.inf for j in range(T)]
            w = np.exp(np.array(s) - max(s))
            loop[b, a, i] = (w / w.sum()) @ v[b, a]
ok(np.allclose(context, loop), "context equals a hand-written loop that skips padded keys (-inf)")
k2, v2 = k.copy(), v.copy()
k2[0, :, 3:], v2[0, :, 3:] = 99.0, -99.0     # scribble over the padded keys and values
ok(np.array_equal(ops.attention_core_forward(q, k2, v2, mask_bias, 0.0, None)[0], context),
   "changing padded keys/values leaves every output bit unchanged")

# %% [markdown]
# > from docs/layers/attention.md: Backward

# %%
stage("Core backward.")
dcontext = rng.standard_normal(context.shape)
dq, dk, dv = ops.attention_core_backward(dcontext, cache)
print(f"   dq {dq.shape}  dk {dk.shape}  dv {dv.shape}")
print(f"   dk[0, 0] (one row per key; keys 3 and 4 are padding):\n{dk[0, 0]}")
ok(np.all(dk[0, :, 3:] == 0.0) and np.all(dv[0, :, 3:] == 0.0), "padded keys get EXACTLY zero dk and dv")
ok(np.allclose(dv, probs.swapaxes(-1, -2) @ dcontext), "dv = probs^T dcontext")
drop_rng = lambda: np.random.default_rng(1)  # a fresh, same-seed generator: the same dropout mask every call
r = check("attention_core", {"q": q, "k": k, "v": v},
          lambda p: ops.attention_core_forward(p["q"], p["k"], p["v"], mask_bias, 0.1, drop_rng()),
          lambda d, c: dict(zip("qkv", ops.attention_core_backward(d, c))))
print("   errors:", {n: f"{e:.1e}" for n, e in r.errors.items()})
ok(r.passed, "gradient check of the core, with attention dropout 0.1")

# %% [markdown]
# > from docs/layers/attention.md: Numbers that must be right

# %%
stage("Multi-head self-attention: projections, split heads, core, merge, output projection, on rows.")
names = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense")
params = {}
for n in names:                                # HF names relative to one encoder layer
    params[n + ".weight"] = 0.5 * rng.standard_normal((H, H))
    params[n + ".bias"] = 0.5 * rng.standard_normal(H)
padded = Padded(attention_mask, np.float64)   # the layout: every position a row, row b*T + t (layout.py)
x = rng.standard_normal((B, T, H))
rows, sa_cache = self_attention_forward(padded.rows_of(x), padded, params, A, 0.0, None)   # (B*T, H)
out = padded.batched(rows)                     # (B, T, H)
print(f"   x {x.shape} as rows {padded.rows_of(x).shape} -> rows {rows.shape} = out {out.shape}, {A} heads of size {D}")

expected = np.zeros_like(out)                  # per head: its D columns of q, k, v
W = {n: (params[n + ".weight"], params[n + ".bias"]) for n in names}
for b in range(B):
    qb, kb, vb = (x[b] @ W[n][0].T + W[n][1] for n in names[:3])             # (T, H)
    heads = []
    for a in range(A):
        cols = slice(a * D, (a + 1) * D)                                     # head a owns features a*D..a*D+D-1
        s = qb[:, cols] @ kb[:, cols].T / math.sqrt(D) + mask_bias[b]        # (T, T)
        pr = np.exp(s - s.max(-1, keepdims=True))
        heads.append((pr / pr.sum(-1, keepdims=True)) @ vb[:, cols])         # (T, D)
    expected[b] = np.concatenate(heads, axis=1) @ W[names[3]][0].T + W[names[3]][1]
ok(np.allclose(out, expected), "equals a per-sequence, per-head loop")

dout = rng.standard_normal(out.shape)
dx, grads = self_attention_backward(padded.rows_of(dout), sa_cache)
print("   |gradient| of each bias: " + ", ".join(f"{n.split('.')[-1]} {np.abs(grads[n + '.bias']).max():.1e}"
                                                    for n in names))
ok(np.abs(grads["attention.self.key.bias"]).max() < 1e-12, "the key bias gradient is zero up to rounding")
shifted = dict(params, **{"attention.self.key.bias": params["attention.self.key.bias"] + 5.0})
ok(np.allclose(self_attention_forward(padded.rows_of(x), padded, shifted, A, 0.0, None)[0], rows),
   "...because changing the key bias does not change the output (softmax ignores a per-row constant)")

r = check("self_attention", {"x": padded.rows_of(x), **params},
          lambda p: self_attention_forward(p["x"], padded, p, A, 0.1, drop_rng()),
          lambda d, c: (lambda dx_g: {"x": dx_g[0], **dx_g[1]})(self_attention_backward(d, c)))
ok(r.passed, f"gradient check of x and all 8 parameters, with dropout (max error {r.max_error:.1e})")

print("\nall checks passed")
