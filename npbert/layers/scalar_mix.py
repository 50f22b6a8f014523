"""ELMo's scalar mix (Peters et al. 2018, eq. 1): a learned weighted sum of n layers' outputs, the
"weighted sum" rows of the BERT paper's feature-based table (docs/layers/scalar_mix.md).

    s = softmax(w)                      w = "scalar_mix.weights" (n,), initialised 0: equal weights
    y = gamma * sum_j s_j x_j           gamma = "scalar_mix.gamma" (1,), initialised 1

The x_j are a frozen encoder's features (npbert/heads/feature_based.py): the backward gives the
gradients of w and gamma only, none for the x_j.
"""
from typing import NamedTuple

import numpy as np

from npbert.ops import SoftmaxCache, softmax_backward, softmax_forward

W, GAMMA = "scalar_mix.weights", "scalar_mix.gamma"


class ScalarMixCache(NamedTuple):
    states: list             # the n inputs x_j (..., H), as given (not copies)
    softmax: SoftmaxCache    # s = softmax(w), (n,)
    mix: np.ndarray          # (..., H) sum_j s_j x_j, before gamma
    gamma: np.ndarray        # (1,)


def scalar_mix_forward(states, params):
    # states: n arrays (..., H) -> y: (..., H)
    s, softmax_cache = softmax_forward(params[W])                           # (n,)
    mix = sum(s[j] * x for j, x in enumerate(states))                       # (..., H)
    return params[GAMMA] * mix, ScalarMixCache(list(states), softmax_cache, mix, params[GAMMA])


def scalar_mix_backward(dy, cache: ScalarMixCache):
    # dy: (..., H) -> grads of w (n,) and gamma (1,)
    dgamma = np.sum(dy * cache.mix).reshape(1)            # (1,)
    ds = cache.gamma * np.array([np.sum(dy * x) for x in cache.states], dy.dtype)   # (n,) d loss / d s_j
    return {W: softmax_backward(ds, cache.softmax), GAMMA: dgamma}
