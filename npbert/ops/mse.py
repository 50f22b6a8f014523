"""Mean squared error, the regression loss of BertForSequenceClassification when num_labels
== 1 (STS-B-like tasks), as torch.nn.MSELoss: loss = mean_i (pred_i - target_i)^2.

Backward: dpred_i = 2 (pred_i - target_i) / N.  (docs/layers/mse.md)
"""
from typing import NamedTuple

import numpy as np


class MseCache(NamedTuple):
    diff: np.ndarray         # (N,) pred - target


def mse_forward(pred, target):
    # pred: (N,), target: (N,) -> scalar
    diff = pred - np.asarray(target, dtype=pred.dtype)                 # (N,)
    return pred.dtype.type(np.mean(diff * diff)), MseCache(diff)


def mse_backward(dloss, cache: MseCache):
    diff = cache.diff
    return diff * diff.dtype.type(2.0 * dloss / max(diff.size, 1))      # (N,)
