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


def forward_flops(config: BertConfig, B: int, masked: int, T: int = T) -> int:
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


def train_flops(config, B, masked, T=T):
    return 3 * forward_flops(config, B, masked, T)        # backward = 2x forward


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
