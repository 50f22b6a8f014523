"""Demo 08 - the blocks around the encoder: embeddings, pooler, MLM head, NSP head.

    python demos/08_embeddings_pooler_heads.py
    (derivations: docs/layers/embeddings.md, pooler.md, mlm_head.md, nsp_head.md)

    x      = dropout(LayerNorm(word[ids] + position[:T] + token_type[types]))   (B, T, H)
    pooled = tanh(dense(h[:, 0]))                                               (B, H)  [CLS]
    mlm    = LayerNorm(gelu(dense(h at masked positions))) @ word^T + bias      (M, V)  tied decoder
    nsp    = pooled @ W^T + b                                                   (B, 2)  0 = IsNext
"""
from demo_common import arguments, ok, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import BertConfig, init_params, ops
from npbert.gradcheck import check
from npbert.layers.embeddings import bert_embeddings_backward, bert_embeddings_forward
from npbert.layers.layout import Padded
from npbert.layers.mlm_head import mlm_head_backward, mlm_head_forward
from npbert.layers.nsp_head import nsp_head_backward, nsp_head_forward
from npbert.layers.pooler import pooler_backward, pooler_forward


def with_input(name, dx_and_grads):          # (dx, {param: grad}) -> {name: dx, param: grad, ...}
    return {name: dx_and_grads[0], **dx_and_grads[1]}


def prefixed(prefix):
    return {k: v for k, v in params.items() if k.startswith(prefix)}


arguments(__doc__)
rng = np.random.default_rng(0)
B, T, H, V, P = 2, 6, 8, 12, 10
config = BertConfig(vocab_size=V, hidden_size=H, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=16, max_position_embeddings=P)
params = init_params(config, rng, np.float64)
for name, value in params.items():           # scale up BERT's tiny init so the numbers are interesting
    params[name] = 10.0 * value if value.ndim == 2 else value + 0.1 * rng.standard_normal(value.shape)
WORD = "bert.embeddings.word_embeddings.weight"
same_seed = lambda: np.random.default_rng(3)  # a fresh, same-seed generator: the same dropout every call

# %% [markdown]
# > from docs/layers/embeddings.md: intro
# > from docs/layers/embeddings.md: Where it sits
# > from docs/layers/embeddings.md: Forward
# > from docs/layers/embeddings.md: Backward

# %%
stage("Embeddings: three tables summed, LayerNorm, dropout.")
ids = np.array([[1, 5, 6, 5, 2, 0], [1, 7, 2, 8, 9, 2]])     # say [CLS]=1, [SEP]=2, [PAD]=0
types = np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]])
emb = prefixed("bert.embeddings.")
padded = Padded(np.ones_like(ids), np.float64)   # the layout: every position a row, row b*T + t (layout.py)
x = padded.batched(bert_embeddings_forward(ids, types, padded, params, config, None)[0])   # (B*T, H) -> (B, T, H)
s = params[WORD][ids] + params["bert.embeddings.position_embeddings.weight"][:T] \
    + params["bert.embeddings.token_type_embeddings.weight"][types]
by_hand, _ = ops.layernorm_forward(s, params["bert.embeddings.LayerNorm.weight"],
                                   params["bert.embeddings.LayerNorm.bias"], 1e-12)
print(f"   ids {ids.shape} -> x {x.shape};  tables: " + ", ".join(f"{k[len('bert.embeddings.'):]} {v.shape}" for k, v in emb.items()))
print(f"   x[0, 1, :4] = {x[0, 1, :4]}\n   by hand     = {by_hand[0, 1, :4]}")
ok(np.allclose(x, by_hand), "x = LayerNorm(word[ids] + position[:T] + token_type[types]) (eval: no dropout)")
x_train, cache = bert_embeddings_forward(ids, types, padded, params, config, same_seed())   # (B*T, H)
g = bert_embeddings_backward(rng.standard_normal(x_train.shape), cache)
print(f"   sum |gradient| of each position row: {np.abs(g['bert.embeddings.position_embeddings.weight']).sum(-1)}")
print(f"   sum |gradient| of each word row:     {np.abs(g[WORD]).sum(-1)}")
ok(np.all(g["bert.embeddings.position_embeddings.weight"][T:] == 0.0), f"position rows {T}..{P - 1} are unused: zero gradient")
ok(np.all(g[WORD][[3, 4, 10, 11]] == 0.0), "word rows of ids not in the batch: zero gradient (from the lookup)")
ok(np.all(g[WORD][0] == 0.0), "[PAD] row 0 (pad_token_id): no gradient from the lookup (HF's padding_idx)")
table0 = params[WORD].copy()
pad_fixed = lambda table: np.where(np.arange(V)[:, None] == 0, table0, table)   # row 0: a constant to the lookup
r = check("bert_embeddings", emb, lambda p: bert_embeddings_forward(ids, types, padded,
                                                                    {**p, WORD: pad_fixed(p[WORD])}, config,
                                                                    same_seed()),
          lambda d, c: bert_embeddings_backward(d, c))
ok(r.passed, f"gradient check of all 5 embedding parameters, dropout 0.1 (max error {r.max_error:.1e})")

# %% [markdown]
# > from docs/layers/pooler.md: intro
# > from docs/layers/pooler.md: Forward
# > from docs/layers/pooler.md: Backward

# %%
stage("Pooler: tanh(dense(h[:, 0])) - only the first token, [CLS], is read.")
h = rng.standard_normal((B, T, H))           # stands in for the encoder output
cls = h[:, 0]                                # (B, H) each sequence's [CLS], the rows the model gives the pooler
pooled, pool_cache = pooler_forward(cls, params)
W, b = params["bert.pooler.dense.weight"], params["bert.pooler.dense.bias"]
print(f"   h {h.shape} -> [CLS] rows {cls.shape} -> pooled {pooled.shape};  pooled[0, :4] = {pooled[0, :4]}")
ok(np.allclose(pooled, np.tanh(cls @ W.T + b)), "pooled = tanh(cls W^T + b)")
ok(np.all(np.abs(pooled) < 1), "pooled is in (-1, 1) (tanh)")
dcls, _ = pooler_backward(rng.standard_normal(pooled.shape), pool_cache)
print(f"   dcls {dcls.shape}: the model adds it to dh at the [CLS] rows; the other tokens get none from the pooler")
r = check("pooler", {"cls": cls.copy(), **prefixed("bert.pooler.")}, lambda p: pooler_forward(p["cls"], p),
          lambda d, c: with_input("cls", pooler_backward(d, c)))
ok(r.passed, f"gradient check, tanh' = 1 - pooled^2 (max error {r.max_error:.1e})")

# %% [markdown]
# > from docs/layers/mlm_head.md: intro
# > from docs/layers/mlm_head.md: Forward
# > from docs/layers/mlm_head.md: Backward

# %%
stage("MLM head, only at the masked positions: rows of h, here b*T + t of the (B*T, H) rows.")
rows = h.reshape(B * T, H)                   # (B*T, H): the encoder's output rows, row b*T + t
positions = np.array([1 * T + 3, 0 * T + 1, 1 * T + 3])  # sequence 1 token 3 (listed twice), sequence 0 token 1
logits, mlm_cache = mlm_head_forward(rows, positions, params, config)
print(f"   positions {positions.tolist()} = (b, t) {[divmod(int(p), T) for p in positions]} -> logits {logits.shape}")
one, _ = mlm_head_forward(h[1, 3][None], np.array([0]), params, config)          # (1, H): one row
print(f"   logits[0, :4] = {logits[0, :4]};  the head on h[1, 3] alone: {one[0, :4]}")
ok(np.allclose(logits[0], one[0]), "row 0 is the head applied to h[1, 3] alone")
dlogits = rng.standard_normal(logits.shape)
dh, g_mlm = mlm_head_backward(dlogits, mlm_cache)                               # (B*T, H)
dh_once, _ = mlm_head_backward(dlogits[:2], mlm_head_forward(rows, positions[:2], params, config)[1])
dh_dup, _ = mlm_head_backward(dlogits[2:], mlm_head_forward(rows, positions[2:], params, config)[1])
r13 = 1 * T + 3                              # the row of sequence 1, token 3
print(f"   dh[{r13}, :4] = {dh[r13, :4]} = {dh_once[r13, :4]} + {dh_dup[r13, :4]}")
ok(np.allclose(dh[r13], dh_once[r13] + dh_dup[r13]), "a position listed twice collects both gradients (scatter-add)")
ok(WORD in g_mlm and g_mlm[WORD].shape == (V, H),
   f"the decoder is the word table: its gradient comes back as '{WORD}' (the model adds it to the lookup's)")
t = mlm_cache.decoder.x2                     # the decoder's LinearCache holds its input t (N, H)
ok(np.allclose(g_mlm[WORD], dlogits.T @ t), "decoder share = dlogits^T t, as for any linear layer")
mlm = {**prefixed("cls.predictions."), WORD: params[WORD]}
r = check("mlm_head", {"h": rows.copy(), **mlm}, lambda p: mlm_head_forward(p["h"], positions, p, config),
          lambda d, c: with_input("h", mlm_head_backward(d, c)))
ok(r.passed, f"gradient check, decoder share and duplicate position included (max error {r.max_error:.1e})")

# %% [markdown]
# > from docs/layers/nsp_head.md: intro
# > from docs/layers/nsp_head.md: Forward
# > from docs/layers/nsp_head.md: Backward

# %%
stage("NSP head: a (2, H) linear layer on pooled; class 0 = IsNext, 1 = NotNext.")
nsp_logits, nsp_cache = nsp_head_forward(pooled, params)
print(f"   pooled {pooled.shape} -> logits {nsp_logits.shape}:\n{nsp_logits}")
r = check("nsp_head", {"pooled": pooled.copy(), **prefixed("cls.seq_relationship.")},
          lambda p: nsp_head_forward(p["pooled"], p),
          lambda d, c: with_input("pooled", nsp_head_backward(d, c)))
ok(r.passed, f"gradient check (max error {r.max_error:.1e})")

print("\nall checks passed")
