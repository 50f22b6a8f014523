"""Demo 10 - a whole (tiny) BertForPreTraining: forward, backward, gradient check, SGD.

    python demos/10_whole_model.py       (walk-through: docs/model.md)
    python demos/10_whole_model.py --plot   (also writes 10_whole_model.png, if matplotlib is installed)

    embeddings -> L encoder layers -> pooler -> MLM head (masked positions) + NSP head
    loss = MLM cross-entropy + NSP cross-entropy;  backward: the same calls in reverse.
"""
import math
from demo_common import arguments, ok, pyplot, show, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import BertConfig, InputError, backend, count_params, init_params, ops
from npbert.layers.mlm_head import mlm_head_backward
from npbert.model import pretraining_backward, pretraining_forward
from npbert.model_inputs import mlm_positions_from_labels


args = arguments(__doc__, picture=True)
rng = np.random.default_rng(0)
WORD = "bert.embeddings.word_embeddings.weight"

# %% [markdown]
# > from docs/model.md: Parameter counts

# %%
stage("Parameter counts. BERT-Base and -Large, as in the paper:")
for preset, expected in (("base", 109_482_240), ("large", 335_141_888)):
    n = count_params(BertConfig.from_preset(preset))
    print(f"   {preset:5s} BertModel {n:>13,}")
    ok(n == expected, f"{preset} has {expected:,} parameters")
config = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=32, max_position_embeddings=16)     # dropout 0.1 (BERT's default)
params = init_params(config, rng, np.float64)   # truncated normal(0, 0.02), LayerNorm 1/0, biases 0
print(f"   our tiny model: L=2 H=16 A=2 I=32 V=40: {count_params(config, heads=True):,} parameters "
      f"in {len(params)} arrays (HF names), e.g. {list(params)[5]} {params[list(params)[5]].shape}")

# %%
stage("A batch of 4 sequences of 8 tokens. Say [PAD]=0 [CLS]=1 [SEP]=2 [MASK]=3.")
B, T = 4, 8
original = rng.integers(4, 40, (B, T))
original[:, 0], original[:, 4], original[:, 7] = 1, 2, 2             # [CLS] A A A [SEP] B B [SEP]
original[3, 5:] = 0                                                    # the last sequence is shorter
attention_mask = (original != 0).astype(np.int64)
token_type_ids = np.zeros((B, T), np.int64)
token_type_ids[:, 5:] = 1
hf_labels = np.full((B, T), ops.IGNORE_INDEX)                         # Hugging Face style: -100 = not predicted
for b, t in ((0, 2), (0, 6), (1, 1), (2, 3), (2, 5), (3, 2)):
    hf_labels[b, t] = original[b, t]
mlm_positions, mlm_labels = mlm_positions_from_labels(hf_labels)       # flat b*T + t, as the model takes them
input_ids = original.copy()
input_ids.reshape(-1)[mlm_positions] = 3                               # replace the chosen tokens by [MASK]
nsp_labels = np.array([0, 1, 0, 1])                                    # 0 = IsNext, 1 = NotNext
batch = dict(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
             mlm_positions=mlm_positions, mlm_labels=mlm_labels, nsp_labels=nsp_labels)
rows, cols = np.divmod(mlm_positions, T)                               # the flat index back to (b, t)
print(f"   input_ids:\n{input_ids}\n   mlm_positions {mlm_positions.tolist()}: flat indices b*T + t into the "
      f"{B} x {T} grid,"
      f" i.e. (row, col) {', '.join(f'({b}, {t})' for b, t in zip(rows, cols))}\n"
      f"   mlm_labels {mlm_labels.tolist()}: the original tokens there, now [MASK] (3)")
ok(np.all(input_ids[rows, cols] == 3), "input_ids[row, col] is [MASK] at every (row, col) of mlm_positions")

# %% [markdown]
# > from docs/model.md: Forward
# > from docs/model.md: Backward

# %%
stage("Forward (evaluation mode, rng=None) and backward.")
out, cache = pretraining_forward(params, config, **batch)
print(f"   mlm_logits {out['mlm_logits'].shape}  nsp_logits {out['nsp_logits'].shape}")
print(f"   loss {out['loss']:.4f} = mlm {out['mlm_loss']:.4f} + nsp {out['nsp_loss']:.4f}")
ok(abs(out["mlm_loss"] - math.log(40)) < 0.1 and abs(out["nsp_loss"] - math.log(2)) < 0.05,
   "at initialisation the predictions are nearly uniform: mlm ~ log 40, nsp ~ log 2")
grads = pretraining_backward(cache)
ok(set(grads) == set(params) and all(grads[k].shape == params[k].shape for k in params),
   "one gradient per parameter, same names and shapes")
dmlm_logits = backend.cross_entropy_backward(1.0, cache.mlm_loss)    # the model's cache: its backend's
decoder_share = mlm_head_backward(dmlm_logits, cache.mlm_head)[1][WORD]
unused = np.setdiff1d(np.arange(40), input_ids)[0]
print(f"   word {unused}: its gradient {grads[WORD][unused][:4]}..., the decoder's share {decoder_share[unused][:4]}...")
ok(np.array_equal(grads[WORD][unused], decoder_share[unused]) and np.any(grads[WORD][unused] != 0),
   f"tied decoder: word {unused} is not in the input, yet gets a gradient - from the decoder alone")

# %%
stage("Gradient check of a few parameters, element by element, with dropout on.\n"
      "   Central differences of the loss are accurate to ~1e-9 absolute (float64 rounding / eps).")


def loss_with_dropout():                        # the same seed every call: the same dropout masks
    return float(pretraining_forward(params, config, **batch, rng=np.random.default_rng(7))[0]["loss"])


_, cache_d = pretraining_forward(params, config, **batch, rng=np.random.default_rng(7))
grads_d = pretraining_backward(cache_d)
eps = 1e-6
for name in (WORD, "bert.embeddings.position_embeddings.weight", "bert.encoder.layer.0.attention.self.query.weight",
             "bert.encoder.layer.1.output.LayerNorm.weight", "bert.pooler.dense.bias", "cls.predictions.bias",
             "cls.seq_relationship.weight"):
    p = params[name].reshape(-1)                # a view: editing it edits the parameter
    analytic = grads_d[name].reshape(-1)
    worst = 0.0
    for i in np.argsort(-np.abs(analytic))[:3]:   # its 3 largest gradient entries (some rows get none)
        old = p[i]
        p[i] = old + eps
        f_plus = loss_with_dropout()
        p[i] = old - eps
        f_minus = loss_with_dropout()
        p[i] = old
        numeric = (f_plus - f_minus) / (2 * eps)
        worst = max(worst, abs(numeric - analytic[i]))
    size = np.abs(analytic).max()
    ok(worst < 1e-8 + 1e-5 * size, f"{name:50s} |grad| up to {size:.1e}, |analytic - numeric| {worst:.1e}")
print("   (every element of every parameter, with weights scaled up so no gradient is tiny:\n"
      "    npbert gradcheck --only bert_for_pretraining)")

# %%
stage("float32 (for training) agrees with float64 (for checking).")
params32 = {k: v.astype(np.float32) for k, v in params.items()}
out32, _ = pretraining_forward(params32, config, **batch)
ok(out32["loss"].dtype == np.float32 and abs(out32["loss"] - out["loss"]) < 1e-5 * out["loss"],
   f"float32 loss {out32['loss']:.6f} vs float64 {out['loss']:.6f}")

# %% [markdown]
# > from docs/model.md: Errors on bad input

# %%
stage("Bad input gets a clear error, not a traceback from deep inside:")
for bad in (dict(batch, input_ids=input_ids + 40), dict(batch, nsp_labels=np.array([0, 1])),
            dict(batch, attention_mask=np.zeros((B, T), np.int64))):
    try:
        pretraining_forward(params, config, **bad)
        raise AssertionError("no error raised")
    except InputError as e:
        print(f"   InputError: {e}")

# %%
stage("Plain SGD on this one batch (no dropout): params -= 0.1 * grads. The loss goes down.")
losses = []
for step in range(50):
    out, cache = pretraining_forward(params, config, **batch)
    grads = pretraining_backward(cache)
    for k in params:
        params[k] -= 0.1 * grads[k]
    losses.append(float(out["loss"]))
    if step % 10 == 0 or step == 49:
        print(f"   step {step:2d}  loss {out['loss']:.4f}  (mlm {out['mlm_loss']:.4f}, nsp {out['nsp_loss']:.6f})")
ok(losses[-1] < 0.5 * losses[0], f"loss {losses[0]:.3f} -> {losses[-1]:.3f}: the model memorises the masked words")
plt = pyplot(args)
if plt is not None:
    fig, ax = plt.subplots(figsize=(6, 3.4), layout="constrained")
    ax.plot(losses, marker=".")
    ax.set(xlabel="SGD step", ylabel="loss (MLM + NSP)", title="one batch, memorised", ylim=(0, None))
    ax.grid(True, alpha=0.3)
    show(plt, fig)
print("   (NSP hardly moves yet: with BERT's 0.02-scale init the four [CLS] vectors differ by ~0.1%,\n"
      "    so the IsNext and NotNext gradients almost cancel; it takes far more steps than this.)")

print("\nall checks passed")
