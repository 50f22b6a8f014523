"""The benchmark's workload: configs, a random pretraining batch, the FLOP count, and one
npbert training / inference step. Used by bench.py (and hf.py builds the same batch).

FLOPs count the matmuls only, 2 * m * n * k each; a backward pass does two matmuls for every
forward one (dx and dW), so a training step is 3x the forward count. Elementwise work
(softmax, GELU, LayerNorm, the optimizer) is not counted: achieved GFLOP/s says how close the
whole step comes to spending all its time in matmuls.
"""
from __future__ import annotations

import numpy as np

from npbert.config import BertConfig

T = 128                                                # default sequence length
MASKED_PER_SEQ = 20                                    # at T 128; 80 at 512, as BERT's max_predictions_per_seq
PRESETS = {"tiny": 32, "mini": 32, "small": 16, "medium": 16, "base": 8}   # preset -> batch size
VOCABS = (30522, 8192)


def make_config(preset: str, vocab: int) -> BertConfig:
    return BertConfig.from_preset(preset, vocab_size=vocab)


def make_batch(config: BertConfig, B: int, seed: int = 0, padded: bool = False, T: int = T) -> dict:
    """Random pairs, 20 masked positions a sequence, token types 0 then 1 from the middle of
    each sequence. padded=False: every sequence is T tokens long; padded=True: lengths drawn
    uniformly from [T / 4, T], [PAD] (id 0, type 0, attention mask 0) after them, as a
    batch of real text is (the masked positions and the second segment inside each length)."""
    rng = np.random.default_rng(seed)
    masked = MASKED_PER_SEQ * T // 128
    ids = rng.integers(5, config.vocab_size, (B, T))
    lengths = rng.integers(T // 4, T + 1, B) if padded else np.full(B, T)
    real = np.arange(T) < lengths[:, None]                                         # (B, T)
    types = (np.arange(T) >= lengths[:, None] // 2) & real
    pos = np.stack([np.sort(rng.choice(np.arange(1, n), masked, replace=False)) for n in lengths])
    positions = (pos + T * np.arange(B)[:, None]).reshape(-1)                       # flat into B*T
    return dict(input_ids=np.where(real, ids, 0), token_type_ids=types.astype(np.int64),
                attention_mask=real.astype(np.int64), mlm_positions=positions,
                mlm_labels=rng.integers(5, config.vocab_size, len(positions)), nsp_labels=rng.integers(0, 2, B))


def forward_matmuls(config: BertConfig, B: int, masked: int, T: int = T) -> list:
    """Every matmul of pretraining_forward as (name, count, batch, m, k, n): count times a
    batch of (m, k) @ (k, n) products (attention: one per sequence and head, batched)."""
    H, I, L, V = config.hidden_size, config.intermediate_size, config.num_hidden_layers, config.vocab_size
    N, heads = B * T, config.num_attention_heads
    d = H // heads
    return [("q, k, v, output projections", 4 * L, 1, N, H, H),
            ("FFN up", L, 1, N, H, I),
            ("FFN down", L, 1, N, I, H),
            ("scores q k^T", L, B * heads, T, d, T),
            ("context p v", L, B * heads, T, T, d),
            ("pooler", 1, 1, B, H, H),
            ("MLM transform", 1, 1, masked, H, H),
            ("tied decoder", 1, 1, masked, H, V),
            ("NSP", 1, 1, B, H, 2)]


def forward_flops(config: BertConfig, B: int, masked: int, T: int = T) -> int:
    """Matmul FLOPs of pretraining_forward: 2 m n k per matmul."""
    return sum(2 * count * batch * m * k * n for _, count, batch, m, k, n in forward_matmuls(config, B, masked, T))


def train_flops(config, B, masked, T=T):
    return 3 * forward_flops(config, B, masked, T)        # backward = 2x forward


def matmul_steps(config: BertConfig, B: int, masked: int, T: int = T, dtype=np.float32):
    """-> (train_step, infer_step) that do nothing but the step's matmuls, in NumPy (BLAS, its
    own threads), into buffers allocated once: the ceiling a step made only of its matmuls
    would reach on this machine. Each forward product y = a @ b gets its backward pair in
    train_step: da = dy @ b^T and db = a^T @ dy (a linear layer's dx and dW, in the layout
    npbert's reference computes them)."""
    rng = np.random.default_rng(0)
    products = []
    for _, count, batch, m, k, n in forward_matmuls(config, B, masked, T):
        a, b, dy = (rng.standard_normal((batch, r, c), dtype=dtype) for r, c in ((m, k), (k, n), (m, n)))
        y, da, db = np.empty((batch, m, n), dtype), np.empty((batch, m, k), dtype), np.empty((batch, k, n), dtype)
        products.append((count, a, b, dy, y, da, db))

    def step(backward):
        for count, a, b, dy, y, da, db in products:
            for _ in range(count):
                np.matmul(a, b, out=y)                             # (batch, m, n)
                if backward:
                    np.matmul(dy, b.transpose(0, 2, 1), out=da)    # (batch, m, k)
                    np.matmul(a.transpose(0, 2, 1), dy, out=db)    # (batch, k, n)

    return (lambda: step(True)), (lambda: step(False))


def init_params(config: BertConfig, seed: int = 0) -> dict:
    """The benchmark's float32 weights (npbert's initialisation; ort.py builds its graph from them)."""
    from npbert.model import init_params as npbert_init
    return npbert_init(config, np.random.default_rng(seed), dtype=np.float32)


def npbert_steps(config: BertConfig, batch: dict, seed: int = 0):
    """-> (train_step, infer_step, optimizer): train = forward + backward + clip + AdamW; infer =
    npbert.inference.pretraining_inference (no dropout, no caches, padding not computed).
    float32 throughout."""
    from npbert import optim
    from npbert.inference import pretraining_inference
    from npbert.model import pretraining_backward, pretraining_forward

    params = init_params(config, seed)
    opt = optim.AdamW(params)
    rng = np.random.default_rng(seed + 1)

    def train_step():
        out, cache = pretraining_forward(params, config, **batch, rng=rng)
        grads = pretraining_backward(cache)
        del cache
        optim.clip_by_global_norm(grads, 1.0)        # looked up on the module: parts.py times it
        opt.step(params, grads, 1e-4)
        return float(out["loss"])

    def infer_step():
        return float(pretraining_inference(params, config, **batch)["loss"])

    return train_step, infer_step, opt
