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

T = 128
MASKED_PER_SEQ = 20
PRESETS = {"tiny": 32, "mini": 32, "small": 16, "medium": 16, "base": 8}   # preset -> batch size
VOCABS = (30522, 8192)


def make_config(preset: str, vocab: int) -> BertConfig:
    return BertConfig.from_preset(preset, vocab_size=vocab)


def make_batch(config: BertConfig, B: int, seed: int = 0) -> dict:
    """Random full-length pairs: token types 0 then 1, no padding, 20 masked positions a sequence."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, config.vocab_size, (B, T))
    types = (np.arange(T) >= T // 2).astype(np.int64) * np.ones((B, 1), np.int64)
    pos = np.stack([np.sort(rng.choice(np.arange(1, T), MASKED_PER_SEQ, replace=False)) for _ in range(B)])
    positions = (pos + T * np.arange(B)[:, None]).reshape(-1)                       # flat into B*T
    return dict(input_ids=ids, token_type_ids=types, attention_mask=np.ones((B, T), np.int64),
                mlm_positions=positions, mlm_labels=rng.integers(5, config.vocab_size, len(positions)),
                nsp_labels=rng.integers(0, 2, B))


def forward_flops(config: BertConfig, B: int, masked: int) -> int:
    """Matmul FLOPs of pretraining_forward: 2 m n k per matmul."""
    H, I, L, V = config.hidden_size, config.intermediate_size, config.num_hidden_layers, config.vocab_size
    N = B * T
    per_layer = (2 * N * H * H * 4                     # q, k, v, output projections
                 + 2 * N * H * I * 2                   # FFN up and down
                 + 2 * B * T * T * H * 2)              # scores q k^T and context p v, over all heads
    heads = (2 * B * H * H                             # pooler
             + 2 * masked * H * H + 2 * masked * H * V  # MLM transform and tied decoder
             + 2 * B * H * 2)                          # NSP
    return L * per_layer + heads


def train_flops(config, B, masked):
    return 3 * forward_flops(config, B, masked)        # backward = 2x forward


def npbert_steps(config: BertConfig, batch: dict, seed: int = 0):
    """-> (train_step, infer_step, params): train = forward + backward + clip + AdamW, infer =
    forward without dropout. float32 throughout."""
    from npbert import optim
    from npbert.model import init_params, pretraining_backward, pretraining_forward

    params = init_params(config, np.random.default_rng(seed), dtype=np.float32)
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
        out, _ = pretraining_forward(params, config, **batch, rng=None)
        return float(out["loss"])

    return train_step, infer_step, opt
