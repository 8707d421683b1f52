"""Scorecard metrics (docs/methods.md, reading R2): estimation error, top-1 regret, seed
averaging. The rank correlations are :func:`labelfree.stats.spearman` and
:func:`labelfree.stats.kendall_tau_b`."""

from __future__ import annotations

import numpy as np


def mae(est: np.ndarray, true: np.ndarray) -> float:
    """Mean absolute error over finite cells; NaN if none."""
    d = np.asarray(est, dtype=np.float64) - np.asarray(true, dtype=np.float64)
    d = d[np.isfinite(d)]
    return float(np.abs(d).mean()) if d.size else float("nan")


def bias(est: np.ndarray, true: np.ndarray) -> float:
    """Mean signed error ``mean(est - true)`` over finite cells."""
    d = np.asarray(est, dtype=np.float64) - np.asarray(true, dtype=np.float64)
    d = d[np.isfinite(d)]
    return float(d.mean()) if d.size else float("nan")


def max_abs_error(est: np.ndarray, true: np.ndarray) -> float:
    d = np.abs(np.asarray(est, dtype=np.float64) - np.asarray(true, dtype=np.float64))
    d = d[np.isfinite(d)]
    return float(d.max()) if d.size else float("nan")


def top1_regret(score: np.ndarray, acc: np.ndarray) -> float:
    """``max A - A[argmax score]``; ties on the top score -> mean regret over them."""
    s, a = np.asarray(score, dtype=np.float64), np.asarray(acc, dtype=np.float64)
    if not np.all(np.isfinite(s)):
        return float("nan")
    top = s >= s.max()
    return float(a.max() - a[top].mean())


def mean_se(x: np.ndarray) -> tuple[float, float]:
    """Mean and standard error over finite values (seed averaging); se 0 for one value."""
    v = np.asarray(x, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0
    return float(v.mean()), se
