"""Demo 07 - the feed-forward block, one post-LN encoder layer, and the encoder stack.

    python demos/07_feedforward_encoder_layer.py
    (derivations: docs/layers/feedforward.md, encoder_layer.md, encoder.md)

    h = LayerNorm(x + dropout(self_attention(x)))
    y = LayerNorm(h + dropout(feedforward(h)))        feedforward = W2 gelu(W1 h + b1) + b2
"""
from demo_common import arguments, ok, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import BertConfig, init_params, ops
from npbert.gradcheck import check
from npbert.layers.encoder import encoder_backward, encoder_forward, layer_params
from npbert.layers.encoder_layer import encoder_layer_backward, encoder_layer_forward
from npbert.layers.feedforward import feedforward_backward, feedforward_forward
from npbert.layers.layout import Padded


def with_dx(dx_and_grads):                   # (dx, {name: grad}) -> {"x": dx, name: grad, ...}
    return {"x": dx_and_grads[0], **dx_and_grads[1]}


arguments(__doc__)
rng = np.random.default_rng(0)
B, T, H, A, I = 2, 5, 8, 2, 16
config = BertConfig(vocab_size=20, hidden_size=H, num_hidden_layers=2, num_attention_heads=A,
                    intermediate_size=I, max_position_embeddings=T, hidden_dropout_prob=0.1,
                    attention_probs_dropout_prob=0.1)
params = init_params(config, rng, np.float64)
for name, value in params.items():           # BERT's init (std 0.02) makes everything nearly linear;
    if value.ndim == 2:                      # larger weights make the demo more interesting
        params[name] = 10.0 * value
layer0 = layer_params(params, 0)          # keys relative to "bert.encoder.layer.0."
print(f"config: L={config.num_hidden_layers} H={H} A={A} I={I}; layer 0 has {len(layer0)} parameter arrays:")
print("   " + ", ".join(sorted(layer0)))

# %% [markdown]
# > from docs/layers/feedforward.md: intro
# > from docs/layers/feedforward.md: Where it sits
# > from docs/layers/feedforward.md: Forward
# > from docs/layers/feedforward.md: Backward

# %%
stage("Feed-forward block: (B, T, H) -> (B, T, I) -> (B, T, H), each token on its own.")
x = rng.standard_normal((B, T, H))
f, f_cache = feedforward_forward(x, layer0, "gelu")
W1, b1 = layer0["intermediate.dense.weight"], layer0["intermediate.dense.bias"]
W2, b2 = layer0["output.dense.weight"], layer0["output.dense.bias"]
print(f"   x {x.shape}  W1 {W1.shape}  W2 {W2.shape}  ->  out {f.shape}")
hidden = x @ W1.T + b1
print(f"   out[0, 0] = {f[0, 0]}\n   by hand   = {(ops.gelu_forward(hidden)[0] @ W2.T + b2)[0, 0]}")
ok(np.allclose(f, ops.gelu_forward(hidden)[0] @ W2.T + b2), "out = gelu(x W1^T + b1) W2^T + b2")
perm = rng.permutation(T)
ok(np.allclose(feedforward_forward(x[:, perm], layer0, "gelu")[0], f[:, perm]),
   "position-wise: permuting the tokens permutes the output")
ffn_keys = [k for k in layer0 if k.startswith(("intermediate.", "output.dense"))]
r = check("feedforward", {"x": x, **{k: layer0[k] for k in ffn_keys}},
          lambda p: feedforward_forward(p["x"], p, "gelu"),
          lambda d, c: with_dx(feedforward_backward(d, c)))
ok(r.passed, f"gradient check of x, W1, b1, W2, b2 (max error {r.max_error:.1e})")

# %% [markdown]
# > from docs/layers/encoder_layer.md: intro
# > from docs/layers/encoder_layer.md: Where it sits
# > from docs/layers/encoder_layer.md: Forward
# > from docs/layers/encoder_layer.md: Backward

# %%
stage("One encoder layer, evaluation mode (rng=None: no dropout).")
attention_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
padded = Padded(attention_mask, np.float64)   # the layout: every position a row, row b*T + t; the mask bias
rows = padded.rows_of(x)                      # (B*T, H): the layers work on rows
y = padded.batched(encoder_layer_forward(rows, padded, layer0, config, None)[0])   # (B, T, H)
print(f"   x {x.shape} -> y {y.shape};  y[1, 0, :4] = {y[1, 0, :4]}")
print(f"   per token of sequence 0: means {y[0].mean(-1)}, variances {y[0].var(-1)}")
ok(np.allclose(y.mean(-1), 0.0, atol=1e-12) and np.allclose(y.var(-1), 1.0, atol=1e-9),
   "post-LN: every token's output has mean 0 and variance 1 (LayerNorm weight 1, bias 0)")
x_pad = x.copy()
x_pad[0, 3:] = 123.0                          # change what sits at the padded positions
y_pad = padded.batched(encoder_layer_forward(padded.rows_of(x_pad), padded, layer0, config, None)[0])
print(f"   with 123.0 written at the padded positions: max |change| at the real tokens "
      f"{np.abs(y_pad[0, :3] - y[0, :3]).max():.1e}")
ok(np.allclose(y_pad[0, :3], y[0, :3], rtol=0, atol=1e-13), "real tokens do not see the padded positions")

# %%
stage("Training mode: dropout from an explicit numpy Generator.")
y_a, _ = encoder_layer_forward(rows, padded, layer0, config, np.random.default_rng(5))
y_b, _ = encoder_layer_forward(rows, padded, layer0, config, np.random.default_rng(5))
y_c, _ = encoder_layer_forward(rows, padded, layer0, config, np.random.default_rng(6))
print(f"   row 0 [:4] with seed 5: {y_a[0, :4]}, seed 5 again: {y_b[0, :4]}, seed 6: {y_c[0, :4]}")
ok(np.array_equal(y_a, y_b), "same seed -> bit-identical output")
ok(not np.allclose(y_a, y_c), "another seed -> other dropout masks")
same_seed = lambda: np.random.default_rng(5)  # fresh per call: every evaluation drops the same elements
r = check("encoder_layer", {"x": rows, **layer0},
          lambda p: encoder_layer_forward(p["x"], padded, p, config, same_seed()),
          lambda d, c: with_dx(encoder_layer_backward(d, c)))
ok(r.passed and len(r.errors) == 1 + 16, f"gradient check of x and all {len(layer0)} parameters, dropout 0.1 (max error {r.max_error:.1e})")

# %% [markdown]
# > from docs/layers/encoder.md: intro
# > from docs/layers/encoder.md: Forward
# > from docs/layers/encoder.md: Backward

# %%
stage("The encoder: the layers in order; backward in reverse, names prefixed again.")
enc = {k: v for k, v in params.items() if k.startswith("bert.encoder.")}
out, enc_cache = encoder_forward(rows, padded, params, config, None)
manual = rows
for i in range(config.num_hidden_layers):
    manual, _ = encoder_layer_forward(manual, padded, layer_params(params, i), config, None)
print(f"   out[0, :4] = {out[0, :4]};  layer by layer: {manual[0, :4]}")
ok(np.array_equal(out, manual), "encoder_forward == the layers applied one after another")
dx, grads = encoder_backward(rng.standard_normal(out.shape), enc_cache)
ok(set(grads) == set(enc), f"backward returns all {len(enc)} encoder gradients under their full HF names")
r = check("encoder", {"x": rows, **enc},
          lambda p: encoder_forward(p["x"], padded, p, config, same_seed()),
          lambda d, c: with_dx(encoder_backward(d, c)))
ok(r.passed, f"gradient check of the 2-layer stack with dropout (max error {r.max_error:.1e})")

print("\nall checks passed")
