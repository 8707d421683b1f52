"""Scores and companion metrics: logit gap, accuracy, churn, ECE, ensembles (paper
Sections II-A, II-C, IV-B; docs/alphatrim.md, reading R7).

Every function is vectorised over models: score matrices are (K, N) (K models or ensembles,
N test points).
"""

from __future__ import annotations

import numpy as np

CLIP_MODES = ("clip", "zero", "none")


def logit_gap(logits: np.ndarray, clip: float = 15.0, clip_mode: str = "clip") -> np.ndarray:
    """m(x) = m+(x) - m-(x) from two-class logits (paper Section II-A), column 1 = positive class.

    logits: (..., N, 2). ``clip_mode``: ``clip`` bounds to [-clip, clip] (default),
    ``zero`` replaces |m| >= clip by 0 (the reference code's behaviour), ``none`` keeps them.
    """
    z = np.asarray(logits, dtype=np.float64)
    if z.shape[-1] != 2:
        raise ValueError(f"logit_gap: need two-class logits (..., N, 2), got shape {z.shape}")
    gap = z[..., 1] - z[..., 0]
    if clip_mode == "clip":
        return np.clip(gap, -clip, clip)
    if clip_mode == "zero":
        return np.where(np.abs(gap) >= clip, 0.0, gap)
    if clip_mode == "none":
        return gap
    raise ValueError(f"logit_gap: clip_mode {clip_mode!r} not in {CLIP_MODES}")


def predictions(gaps: np.ndarray) -> np.ndarray:
    """MAP labels sgn(m) as {0, 1} (ties -> positive class 1, paper Section II-A)."""
    return (np.asarray(gaps) >= 0).astype(np.int8)


def accuracy(gaps: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Accuracy in percent of each row of ``gaps`` (paper Section IV-B); labels in {0, 1}."""
    y = np.asarray(labels)
    return 100.0 * (predictions(gaps) == y).mean(axis=-1)


def churn_matrix(gaps: np.ndarray) -> np.ndarray:
    """Pairwise churn: count of test points on which models i and j disagree (paper Section IV-B).

    gaps: (K, N). Returns a symmetric int64 (K, K) matrix with zero diagonal.
    """
    p = predictions(gaps).astype(np.float64)
    if p.shape[1] >= 2**52:
        raise ValueError("churn_matrix: too many test points for exact float counting")
    agree_pos = p @ p.T
    agree_neg = (1.0 - p) @ (1.0 - p).T
    return (p.shape[1] - np.rint(agree_pos + agree_neg)).astype(np.int64)


def churn_vs(gaps: np.ndarray, target_gaps: np.ndarray) -> np.ndarray:
    """Churn of each row of ``gaps`` w.r.t. one model or ensemble ``target_gaps`` (N,)."""
    return (predictions(gaps) != predictions(target_gaps)).sum(axis=-1).astype(np.int64)


def average_churn(churn: np.ndarray) -> np.ndarray:
    """Mean churn of each model to the K - 1 others (paper Section IV-B)."""
    c = np.asarray(churn, dtype=np.float64)
    k = c.shape[0]
    if k < 2:
        raise ValueError("average_churn: need at least two models")
    return (c.sum(axis=1) - np.diag(c)) / (k - 1)


def ece(gaps: np.ndarray, labels: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Expected calibration error with equal-width bins on [0, 1] (docs/alphatrim.md, reading R7).

    confidence = max(sigma(m), 1 - sigma(m)); bins are (r/R, (r+1)/R] (the first includes 0).
    gaps: (N,) or (K, N); returns a float or (K,).
    """
    g = np.asarray(gaps, dtype=np.float64)
    single = g.ndim == 1
    g = np.atleast_2d(g)
    k, n = g.shape
    conf = 1.0 / (1.0 + np.exp(-np.abs(g)))  # probability of the predicted class
    correct = (predictions(g) == np.asarray(labels)).astype(np.float64)
    b = np.clip(np.ceil(conf * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    flat = (b + n_bins * np.arange(k)[:, None]).ravel()
    size = k * n_bins
    s_conf = np.bincount(flat, weights=conf.ravel(), minlength=size).reshape(k, n_bins)
    s_acc = np.bincount(flat, weights=correct.ravel(), minlength=size).reshape(k, n_bins)
    out = np.abs(s_acc - s_conf).sum(axis=1) / n
    return float(out[0]) if single else out


def sample_ensembles(
    pool_size: int, size: int, reps: int, rng: np.random.Generator
) -> np.ndarray:
    """Member indices of ``reps`` ensembles of ``size`` distinct pool models (paper Section V-A).

    Members are distinct within an ensemble; repetitions are independent. Returns (reps, size).
    """
    if not 1 <= size <= pool_size:
        raise ValueError(f"sample_ensembles: size {size} not in [1, pool size {pool_size}]")
    keys = rng.random((reps, pool_size))
    return np.argsort(keys, axis=1)[:, :size]


def ensemble_gaps(gaps: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Averaged logit gaps of ensembles (paper Eq. 9): gaps (K, N), members (E, M_ens) -> (E, N).

    Averaging logit gaps equals averaging the two-logit vectors then applying softmax.
    """
    g = np.asarray(gaps, dtype=np.float64)
    m = np.asarray(members)
    out = np.zeros((m.shape[0], g.shape[1]))
    for j in range(m.shape[1]):  # loop over ensemble size (<= 200), vectorised over ensembles
        out += g[m[:, j]]
    return out / m.shape[1]
