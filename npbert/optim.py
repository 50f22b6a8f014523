"""AdamW as BERT trains with it, the warmup + linear-decay schedule, and global-norm clipping.

    g      <- g * min(1, max_norm / ||g||)                 clip by the norm of ALL gradients
    m      <- b1 m + (1 - b1) g
    v      <- b2 v + (1 - b2) g^2
    p      <- p - lr * ( m_hat / (sqrt(v_hat) + eps) + wd * p )     wd = 0 for LayerNorm and biases
    m_hat, v_hat = m / (1 - b1^t), v / (1 - b2^t)      with bias correction (default), else m, v

The original BERT (AdamWeightDecayOptimizer) skips bias correction; PyTorch's AdamW and
Hugging Face apply it. We apply it by default, so a step here equals torch.optim.AdamW's up
to rounding (a few ulp: torch applies p's update with addcdiv, another rounding order)
(bias_correction=False gives the original BERT update). With a warmup it changes little:
the early steps, where the correction is largest, run at a tiny learning rate anyway.
"""
from __future__ import annotations

import math

import numpy as np

from npbert import backend
from npbert.errors import CheckpointError


def decays(name: str) -> bool:
    """Weight decay applies to weight matrices and embeddings, not to LayerNorm or any bias."""
    return not (name.endswith(".bias") or "LayerNorm" in name)


def linear_warmup_decay(step: int, peak_lr: float, warmup_steps: int, total_steps: int) -> float:
    """Learning rate for 0-based update `step`: linear warmup from 0 to peak_lr over
    warmup_steps, then linear decay to 0 at total_steps (transformers' get_linear_schedule_with_warmup)."""
    if step < warmup_steps:
        return peak_lr * step / max(1, warmup_steps)
    return peak_lr * max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


def global_norm(grads: dict) -> float:
    return math.sqrt(sum(backend.sum_of_squares(g) for g in grads.values()))


def clip_by_global_norm(grads: dict, max_norm: float) -> float:
    """Scale all gradients in place so their global norm is at most max_norm; returns the norm before.
    A NaN or infinite norm is returned with the gradients untouched: the caller stops there."""
    norm = global_norm(grads)
    if max_norm and math.isfinite(norm) and norm > max_norm:
        scale = max_norm / norm
        for g in grads.values():
            g *= g.dtype.type(scale)
    return norm


class AdamW:
    """Decoupled weight-decay Adam over a flat dict of parameters, updated in place. It updates
    the parameters it was made with: the others in the dict step() is given are left alone
    (a frozen encoder, npbert/heads/feature_based.py)."""

    def __init__(self, params: dict, weight_decay=0.01, betas=(0.9, 0.999), eps=1e-6, bias_correction=True):
        self.weight_decay, self.betas, self.eps, self.bias_correction = weight_decay, betas, eps, bias_correction
        self.m = {k: np.zeros_like(p) for k, p in params.items()}
        self.v = {k: np.zeros_like(p) for k, p in params.items()}
        self.t = 0                                      # number of updates done

    def step(self, params: dict, grads: dict, lr: float) -> None:
        """One update of every parameter this optimizer was made with; the others in `params`
        (frozen ones: a frozen encoder, or the NSP head of pretraining without NSP) stay exactly
        as they are, weight decay included."""
        self.t += 1
        b1, b2 = self.betas
        c1 = 1.0 - b1 ** self.t if self.bias_correction else 1.0
        c2 = 1.0 - b2 ** self.t if self.bias_correction else 1.0
        for k in self.m:
            p = params[k]
            # one hot op per tensor (npbert.ops.adamw: the formula, its order; the numba backend fuses it)
            wd = self.weight_decay if decays(k) else 0.0
            backend.adamw_update(p, grads[k], self.m[k], self.v[k], lr, b1, b2, self.eps, c1, c2, wd)

    # --- state for checkpoints ------------------------------------------------------------------
    def state_arrays(self) -> dict:
        out = {f"m/{k}": a for k, a in self.m.items()}
        out.update({f"v/{k}": a for k, a in self.v.items()})
        return out

    def load_state_arrays(self, arrays: dict, t: int) -> None:
        for k in self.m:
            for kind, store in (("m", self.m), ("v", self.v)):
                a = arrays.get(f"{kind}/{k}")
                if a is None or a.shape != store[k].shape:
                    raise CheckpointError(f"training state has no matching optimizer moment {kind}/{k}")
                store[k] = np.array(a, dtype=store[k].dtype)
        self.t = int(t)
