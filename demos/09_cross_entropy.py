"""Demo 09 - softmax cross-entropy with ignore_index, the loss of both pretraining heads.

    python demos/09_cross_entropy.py     (derivation: docs/layers/cross_entropy.md)
    python demos/09_cross_entropy.py --plot   (also writes 09_cross_entropy.png, if matplotlib is installed)

    loss     = -(1/n) sum over counted rows of log softmax(logits_i)[label_i]
    dlogits  = (softmax(logits_i) - onehot(label_i)) / n  for counted rows, 0 for ignored ones
"""
import math
from demo_common import arguments, ok, pyplot, show, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import ops
from npbert.gradcheck import check


args = arguments(__doc__, picture=True)
rng = np.random.default_rng(0)
N, C = 6, 5
IGNORE = ops.IGNORE_INDEX

# %% [markdown]
# > from docs/layers/cross_entropy.md: intro
# > from docs/layers/cross_entropy.md: Where it sits
# > from docs/layers/cross_entropy.md: Forward

# %%
stage("Uniform logits: every class has probability 1/C, so the loss is log C.")
loss, _ = ops.cross_entropy_forward(np.zeros((N, C)), np.arange(N) % C)
print(f"   C = {C}: loss {loss:.6f}, log C = {math.log(C):.6f}")
ok(abs(loss - math.log(C)) < 1e-12, "cross-entropy of uniform logits = log(C)")
print(f"   (an untrained BERT's MLM loss starts near log(30522) = {math.log(30522):.3f}, its NSP loss near log 2 = {math.log(2):.3f})")

# %%
stage(f"ignore_index = {IGNORE}: those rows are skipped and the mean is over the rest.")
logits = 3.0 * rng.standard_normal((N, C))
labels = np.array([2, IGNORE, 0, 4, IGNORE, 1])
loss, cache = ops.cross_entropy_forward(logits, labels)
counted = labels != IGNORE
logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))   # naive log-softmax, fine for small logits
by_hand = -np.mean(logp[counted, labels[counted]])
print(f"   labels {labels.tolist()} -> {counted.sum()} counted rows, loss {loss:.6f}")
ok(np.isclose(loss, by_hand), "loss = -mean over the 4 counted rows of log p(label)")

# %% [markdown]
# > from docs/layers/cross_entropy.md: Backward

# %%
stage("Backward: (softmax - onehot) / n on counted rows, 0 on ignored rows.")
dlogits = ops.cross_entropy_backward(1.0, cache)
softmax = np.exp(logp)
onehot = np.zeros((N, C))
onehot[counted, labels[counted]] = 1.0
print(f"   dlogits[0] = {dlogits[0]}")
ok(np.allclose(dlogits[counted], (softmax - onehot)[counted] / counted.sum()), "dlogits = (softmax - onehot) / n")
ok(np.all(dlogits[~counted] == 0.0), "ignored rows get exactly 0")
ok(np.allclose(dlogits.sum(-1), 0.0, atol=1e-16), "every row of dlogits sums to 0")
ok(np.allclose(ops.cross_entropy_backward(2.5, cache), 2.5 * dlogits), "the upstream dloss just scales it")
r = check("cross_entropy", {"logits": logits}, lambda p: ops.cross_entropy_forward(p["logits"], labels),
          lambda d, c: {"logits": ops.cross_entropy_backward(d, c)})
ok(r.passed, f"gradient check (error {r.max_error:.1e})")
plt = pyplot(args)
if plt is not None:                          # one row, C = 5 classes: move the label's logit, the others fixed at 0
    z = np.linspace(-6, 6, 241)
    row = np.zeros((len(z), C))
    row[:, 0] = z                                                         # (241, C), label 0
    losses = [ops.cross_entropy_forward(row[i:i + 1], np.array([0]))[0] for i in range(len(z))]
    grads = ops.cross_entropy_backward(1.0, ops.cross_entropy_forward(row, np.zeros(len(z), int))[1]) * len(z)
    fig, ax = plt.subplots(figsize=(6.5, 3.6), layout="constrained")
    ax.plot(z, losses, label="loss = -log p(label)")
    ax.plot(z, grads[:, 0], label="d loss / d its logit = p - 1")
    ax.plot(z, grads[:, 1], label="d loss / d another logit = p")
    ax.axhline(math.log(C), color="grey", ls=":", label="log C at logit 0 (uniform)")
    ax.set(xlabel="the label's logit (the other 4 at 0)", title="cross-entropy of one row")
    ax.legend(fontsize=8), ax.grid(True, alpha=0.3)
    show(plt, fig)

# %% [markdown]
# > from docs/layers/cross_entropy.md: Numbers that must be right

# %%
stage("Edge cases.")
huge = logits + np.array([[1e4], [-1e4], [0], [5e3], [0], [1e4]])
print(f"   rows shifted by up to 1e4: loss {ops.cross_entropy_forward(huge, labels)[0]:.6f} (unshifted {loss:.6f})")
ok(np.isclose(ops.cross_entropy_forward(huge, labels)[0], loss), "logits of 1e4 are fine (max subtracted; a row shift changes nothing)")
none_counted = np.full(N, IGNORE)
l0, c0 = ops.cross_entropy_forward(logits, none_counted)
print(f"   no counted rows: loss {l0}, |gradient| {np.abs(ops.cross_entropy_backward(1.0, c0)).sum()}")
ok(l0 == 0.0 and np.all(ops.cross_entropy_backward(1.0, c0) == 0.0),
   "no counted rows: loss 0 and gradient 0 (PyTorch would give NaN)")
l32, _ = ops.cross_entropy_forward(logits.astype(np.float32), labels)
print(f"   float32: loss {l32} ({l32.dtype}), float64 {loss:.8f}")
ok(l32.dtype == np.float32 and abs(l32 - loss) < 1e-5, "float32 logits give a float32 loss, within 1e-5")
confident = np.where(np.arange(C) == 3, 20.0, 0.0)[None]         # very sure of class 3
print(f"   logits {confident[0]}: loss {ops.cross_entropy_forward(confident, np.array([3]))[0]:.1e} for label 3, "
      f"{ops.cross_entropy_forward(confident, np.array([0]))[0]:.2f} for label 0")
ok(ops.cross_entropy_forward(confident, np.array([3]))[0] < 1e-7 < ops.cross_entropy_forward(confident, np.array([0]))[0],
   "confidently right: loss ~0; confidently wrong: loss ~20")

print("\nall checks passed")
