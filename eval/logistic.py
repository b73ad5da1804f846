"""Logistic regression by Newton steps, for the offline relevance calibrations.

`xb` carries the bias as its last column; the bias is not regularised.
"""

from __future__ import annotations

import numpy as np


def balanced_weights(y: np.ndarray) -> np.ndarray:
    """Sample weights that give the positives and the negatives equal total weight (mean 1)."""
    return np.where(y == 1, 0.5 / max(y.sum(), 1), 0.5 / max((1 - y).sum(), 1)) * len(y)


def fit_newton(
    xb: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None, l2: float = 1e-2, iters: int = 50
) -> np.ndarray:
    """Coefficients (the bias last) of P(y=1) = sigmoid(xb @ w), L2-penalised, optionally weighted."""
    w = np.zeros(xb.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(xb @ w)))
        residual = p - y if weights is None else weights * (p - y)
        curvature = p * (1 - p) if weights is None else weights * p * (1 - p)
        gradient = xb.T @ residual + l2 * np.r_[w[:-1], 0]
        hessian = (xb * curvature[:, None]).T @ xb + l2 * np.eye(len(w))
        w -= np.linalg.solve(hessian, gradient)
    return w
