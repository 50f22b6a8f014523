"""Multinomial logistic regression, L2-regularised, trained full-batch with Adam: the classifier of
the bag-of-words baseline (npbert/finetuning/bow_baseline.py, on sparse tf-idf rows) and of the linear probes
(npbert/linguistics/probes.py, on a frozen layer's features).

    p(y | x) = softmax(x W + b)      loss = mean cross-entropy + (l2 / 2) ||W||^2  (convex)

X is anything with X.matmul(W) -> X @ W, X.rmatmul(G) -> X^T @ G and X.shape (Dense below, or
bow_baseline's Sparse), so one trainer serves both.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npbert.ops import softmax_forward


@dataclass
class Dense:
    """A (rows, F) float64 matrix behind the interface train_logreg expects."""
    x: np.ndarray

    @property
    def shape(self):
        return self.x.shape

    def matmul(self, w):                                   # (rows, F) @ (F, C) -> (rows, C)
        return self.x @ w

    def rmatmul(self, g):                                  # (rows, F)^T @ (rows, C) -> (F, C)
        return self.x.T @ g


def loss_and_grads(W, b, X, y, l2):
    """Mean softmax cross-entropy + (l2/2)||W||^2 and its gradients (dlogits = (p - onehot) / N)."""
    logits = X.matmul(W) + b                                                        # (N, C)
    p, _ = softmax_forward(logits)
    N = len(y)
    loss = -np.mean(np.log(p[np.arange(N), y] + 1e-300)) + 0.5 * l2 * np.sum(W * W)
    dlogits = p.copy()
    dlogits[np.arange(N), y] -= 1.0
    dlogits /= N
    return loss, X.rmatmul(dlogits) + l2 * W, dlogits.sum(axis=0)


def train_logreg(X, y, num_classes, l2, steps=300, lr=0.1):
    """Full-batch Adam on the convex objective above; returns (W, b)."""
    W, b = np.zeros((X.shape[1], num_classes)), np.zeros(num_classes)
    m = [np.zeros_like(W), np.zeros_like(b)]
    v = [np.zeros_like(W), np.zeros_like(b)]
    for t in range(1, steps + 1):
        _, dW, db = loss_and_grads(W, b, X, y, l2)
        for k, (p, g) in enumerate(((W, dW), (b, db))):
            m[k] = 0.9 * m[k] + 0.1 * g
            v[k] = 0.999 * v[k] + 0.001 * g * g
            p -= lr * (m[k] / (1 - 0.9 ** t)) / (np.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8)
    return W, b
