"""Demo 02 - the embedding lookup and its scatter-add backward.

    python demos/02_embedding.py         (derivation: docs/layers/embedding.md)

Forward is table[ids]. Backward must ADD the gradients of every use of a row: we show
that the tempting `dtable[ids] += dout` silently drops repeated ids, and np.add.at does not.
"""
from demo_common import arguments, ok, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import ops
from npbert.gradcheck import check


arguments(__doc__)
rng = np.random.default_rng(0)
V, H = 6, 3

# %% [markdown]
# > from docs/layers/embedding.md: intro
# > from docs/layers/embedding.md: Where it sits
# > from docs/layers/embedding.md: Forward

# %%
stage("Forward: one row of the table per id.")
table = rng.standard_normal((V, H))
ids = np.array([[1, 2, 1],
                [4, 1, 0]])                  # id 1 is used three times, ids 3 and 5 never
out, cache = ops.embedding_forward(ids, table)
print(f"   ids {ids.shape} = {ids.tolist()}, table {table.shape}  ->  out {out.shape}")
print(f"   out[1, 0] = {out[1, 0]}, table[4] = {table[4]}")
ok(np.array_equal(out[1, 0], table[4]), "out[1, 0] is row 4 of the table")

# %% [markdown]
# > from docs/layers/embedding.md: Backward

# %%
stage("Backward: dtable[v] = sum of dout over every position whose id is v.")
dout = rng.standard_normal(out.shape)
dtable = ops.embedding_backward(dout, cache)
print(f"   dtable {dtable.shape}:\n{dtable}")
ok(np.allclose(dtable[1], dout[0, 0] + dout[0, 2] + dout[1, 1]), "row 1 collects its three gradients")
ok(np.all(dtable[[3, 5]] == 0.0), "rows 3 and 5 were never read: gradient exactly 0")
one_hot = np.eye(V)[ids.reshape(-1)]        # (B*T, V): the lookup is one_hot @ table
ok(np.allclose(dtable, one_hot.T @ dout.reshape(-1, H)), "same as the linear-layer rule with a one-hot input")

# %%
stage("The classic bug: fancy-index += is buffered, so a repeated id keeps only ONE gradient.")
wrong = np.zeros_like(table)
wrong[ids.reshape(-1)] += dout.reshape(-1, H)
print(f"   buffered row 1 = {wrong[1]}   vs   scatter-add row 1 = {dtable[1]}")
ok(not np.allclose(wrong[1], dtable[1]), "dtable[ids] += dout is WRONG for repeated ids")
ok(np.allclose(wrong[1], dout[1, 1]), "...it kept only the last occurrence")

# %% [markdown]
# > from docs/layers/embedding.md: Numbers that must be right

# %%
stage("Gradient check (finite differences, float64).")
r = check("embedding", {"table": table},
          lambda p: ops.embedding_forward(ids, p["table"]),
          lambda d, c: {"table": ops.embedding_backward(d, c)})
print("   errors:", {k: f"{v:.1e}" for k, v in r.errors.items()})
ok(r.passed, "scatter-add backward matches finite differences")

print("\nall checks passed")
