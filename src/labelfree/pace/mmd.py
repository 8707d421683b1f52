"""Exact greedy MMD-critic prototypes and regularised criticisms (paper section 3.3; docs/pace.md,
reading R6).

Memory is O(block x s + m x s) per group of size ``s``: kernel column sums are accumulated in
row blocks and only the kernel rows of the chosen prototypes are ever materialised, so no dense
s x s (let alone N x N) kernel is held.
"""

from __future__ import annotations

import numpy as np

#: Kernel entries per block when accumulating column sums (float64: 32 MB).
BLOCK_ELEMS = 4_000_000


def l2_rows(x: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation (sklearn ``normalize``; zero rows stay zero), reading R6."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    norms[norms == 0] = 1.0
    return x / norms[:, None]


def rbf_rows(x: np.ndarray, rows: np.ndarray, gamma: float, sq: np.ndarray | None = None) -> np.ndarray:
    """Kernel rows ``K[rows, :] = exp(-gamma ||x_r - x_j||^2)`` (float64, shape (len(rows), s))."""
    if sq is None:
        sq = np.einsum("ij,ij->i", x, x)
    xr = x[rows]
    d2 = sq[rows, None] + sq[None, :] - 2.0 * (xr @ x.T)
    np.maximum(d2, 0.0, out=d2)
    return np.exp(-gamma * d2)


def kernel_colsums(x: np.ndarray, gamma: float) -> np.ndarray:
    """``sum_i K_ic`` for every column ``c``, computed in row blocks (never the full kernel)."""
    s = len(x)
    sq = np.einsum("ij,ij->i", x, x)
    out = np.zeros(s, dtype=np.float64)
    step = max(1, BLOCK_ELEMS // max(s, 1))
    for start in range(0, s, step):
        out += rbf_rows(x, np.arange(start, min(s, start + step)), gamma, sq).sum(axis=0)
    return out


def mmd_greedy(x: np.ndarray, m: int, gamma: float = 0.026, normalise: bool = True) -> np.ndarray:
    """Greedy prototype order maximising the MMD-critic objective J(S) (reading R6).

    score(c) = (2/s) sum_i K_ic - (2 sum_{j in S} K_jc + K_cc) / (t + 1); ties -> smallest
    position. Returns the first ``min(m, s)`` positions (within ``x``) in pick order.
    """
    x = l2_rows(x) if normalise else np.asarray(x, dtype=np.float64)
    s = len(x)
    m = int(min(m, s))
    if m <= 0:
        return np.zeros(0, dtype=np.int64)
    sq = np.einsum("ij,ij->i", x, x)
    colsum = kernel_colsums(x, gamma)
    kdiag = np.ones(s)  # RBF: K_cc = 1
    ksel = np.zeros(s, dtype=np.float64)  # sum_{j in S} K_jc
    chosen = np.empty(m, dtype=np.int64)
    taken = np.zeros(s, dtype=bool)
    base = 2.0 * colsum / s
    for t in range(m):
        score = base - (2.0 * ksel + kdiag) / (t + 1)
        score[taken] = -np.inf
        c = int(np.argmax(score))
        chosen[t] = c
        taken[c] = True
        if t + 1 < m:
            ksel += rbf_rows(x, np.array([c]), gamma, sq)[0]
    return chosen


def mmd_objective(x: np.ndarray, subset: np.ndarray, gamma: float = 0.026) -> float:
    """J(S) = 2/(s|S|) sum_{i,j in S} K_ij - 1/|S|^2 sum_{i,j in S} K_ij, on L2-normalised rows.

    Brute force (to check the greedy order); uses the full group kernel.
    """
    x = l2_rows(x)
    subset = np.asarray(subset)
    k_all = rbf_rows(x, subset, gamma)  # (|S|, s)
    k_ss = k_all[:, subset]
    s, t = len(x), len(subset)
    return float(2.0 / (s * t) * k_all.sum() - k_ss.sum() / t**2)


def mmd_criticisms(
    x: np.ndarray, prototypes: np.ndarray, k: int, gamma: float = 0.026, normalise: bool = True
) -> np.ndarray:
    """MMD-critic ``select_criticism_regularized`` with ``reg='logdet'`` (reading R6).

    Witness |mean_i K_ic - mean_{j in P} K_jc| plus the log-det diversity regulariser
    log|K_cc - k_c^T K_CC^{-1} k_c| over the criticisms C chosen so far. Returns up to ``k``
    positions (never prototypes).
    """
    x = l2_rows(x) if normalise else np.asarray(x, dtype=np.float64)
    s = len(x)
    prototypes = np.asarray(prototypes, dtype=np.int64)
    k = int(min(k, s - len(prototypes)))
    if k <= 0 or len(prototypes) == 0:
        return np.zeros(0, dtype=np.int64)
    sq = np.einsum("ij,ij->i", x, x)
    witness = np.abs(
        kernel_colsums(x, gamma) / s - rbf_rows(x, prototypes, gamma, sq).mean(axis=0)
    )
    cand = np.ones(s, dtype=bool)
    cand[prototypes] = False
    chosen: list[int] = []
    krows = np.zeros((0, s))
    for _ in range(k):
        if chosen:
            kcc = krows[:, chosen]
            inv = np.linalg.pinv(kcc)
            reg = np.einsum("ij,ij->j", inv @ krows, krows)
            score = witness + np.log(np.abs(1.0 - reg) + 1e-300)
        else:
            score = witness + np.log(1.0)
        score = np.where(cand, score, -np.inf)
        c = int(np.argmax(score))
        chosen.append(c)
        cand[c] = False
        krows = np.vstack([krows, rbf_rows(x, np.array([c]), gamma, sq)])
    return np.asarray(chosen, dtype=np.int64)
