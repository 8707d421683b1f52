"""From per-sample oracle scores to a dataset accuracy and the RMSE metric (docs/syp.md, readings
R8 and R10)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MODES = ("threshold", "mean")


def set_accuracy(q: np.ndarray, tau: float = 0.5, mode: str = "threshold") -> float:
    """Predicted accuracy in percent: ``100 mean(q > tau)`` (authors' code), or ``100 mean(q)``
    (soft)."""
    q = np.asarray(q, dtype=np.float64)
    if q.size == 0:
        raise ValueError("set_accuracy: empty score vector")
    if mode == "threshold":
        return float(100.0 * np.mean(q > tau))
    if mode == "mean":
        return float(100.0 * q.mean())
    raise ValueError(f"aggregate mode {mode!r} is not one of {MODES}")


def ensemble_scores(*qs: np.ndarray) -> np.ndarray:
    """Average the per-sample scores of several oracles before thresholding (docs/syp.md,
    reading R8)."""
    if not qs:
        raise ValueError("ensemble_scores: no score vectors")
    return np.mean(np.stack([np.asarray(q, dtype=np.float64) for q in qs]), axis=0)


def rmse(true: np.ndarray, pred: np.ndarray) -> float:
    """``sqrt(mean((true - pred)^2))`` (with the 1/M the paper's eq. 16 omits: docs/syp.md,
    reading R10)."""
    t = np.asarray(true, dtype=np.float64)
    p = np.asarray(pred, dtype=np.float64)
    if t.shape != p.shape or t.size == 0:
        raise ValueError(f"rmse: shapes {t.shape} and {p.shape} must match and be non-empty")
    return float(np.sqrt(np.mean((t - p) ** 2)))


def select_tau(
    scores: Sequence[np.ndarray], true_acc: np.ndarray, grid: Sequence[float]
) -> tuple[float, dict[float, float]]:
    """Pick ``tau`` from ``grid`` with the lowest RMSE on labelled validation sets (docs/syp.md,
    reading R8).

    Uses validation labels (the tables flag it). Ties go to the first grid value.
    Returns the chosen tau and the RMSE of every grid value.
    """
    if not grid:
        raise ValueError("select_tau: empty tau grid")
    table = {float(t): rmse(true_acc, np.array([set_accuracy(q, t) for q in scores])) for t in grid}
    best = min(table, key=lambda t: (table[t], list(table).index(t)))
    return best, table
