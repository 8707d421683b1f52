"""Ranking metrics of the LaF study (paper section 4.5, Eqs. 4-6): Spearman, Kendall
tau-b, Jaccard top-k.

Convention (docs/laf.md, reading R4): correlations compare ascending ``rankdata(., 'min')`` ranks
of the true accuracies and of the estimated scores (equivalently the values themselves); top-k uses descending
order with ties broken by the lower model index, and flags a tie straddling position k.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as _st

from labelfree import stats

DEFAULT_KS = (1, 3, 5, 10)


def ground_truth_accuracy(Yhat: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True top-1 accuracy (n,) of every model on the whole test set (docs/laf.md, reading R16)."""
    Yhat = np.asarray(Yhat)
    y = np.asarray(y).ravel()
    if Yhat.ndim != 2 or Yhat.shape[0] != y.size:
        raise ValueError(f"labels ({y.size}) do not match the prediction matrix {Yhat.shape}")
    return (Yhat == y[:, None]).mean(axis=0)


def top_k(values: np.ndarray, k: int) -> tuple[np.ndarray, bool]:
    """Indices of the k largest values, ties to the lower index, and the boundary-tie flag."""
    v = np.asarray(values, dtype=float)
    order = np.lexsort((np.arange(v.size), -v))
    tie = bool(k < v.size and v[order[k - 1]] == v[order[k]])
    return order[:k], tie


def jaccard_top_k(truth: np.ndarray, score: np.ndarray, k: int) -> tuple[float, bool]:
    """J_k = |top_k(truth) & top_k(score)| / |union| (paper Eq. 6; docs/laf.md, reading R4) and the
    tie flag.

    NaN when k is not below the number of models (the top-k would be every model).
    """
    if k >= len(truth):
        return float("nan"), False
    a, ta = top_k(truth, k)
    b, tb = top_k(score, k)
    inter = np.intersect1d(a, b).size
    return inter / (2 * k - inter), ta or tb


def ranking_metrics(
    truth: np.ndarray,
    score: np.ndarray,
    ks: tuple[int, ...] = DEFAULT_KS,
    constant_as_zero: bool = False,
) -> dict[str, float]:
    """Spearman rho, Kendall tau-b (with two-sided p-values) and Jaccard top-k (paper Eqs. 4-6).

    ``constant_as_zero``: a constant score carries no ranking information; sampling baselines
    record rho = tau = 0 for it (docs/laf.md, reading R6), LaF's degenerate case keeps NaN
    (reading R3).
    """
    truth = np.asarray(truth, dtype=float)
    score = np.asarray(score, dtype=float)
    if truth.shape != score.shape or truth.ndim != 1:
        raise ValueError(f"truth {truth.shape} and score {score.shape} must be equal 1-D shapes")
    constant = bool(np.ptp(score) == 0)
    rho = stats.spearman(truth, score)
    tau = stats.kendall_tau_b(truth, score)
    rho_p = tau_p = float("nan")
    if np.isfinite(rho):
        rho_p = float(_st.spearmanr(truth, score).pvalue)
        tau_p = float(_st.kendalltau(truth, score, variant="b").pvalue)
    elif constant and constant_as_zero and np.ptp(truth) > 0:
        rho = tau = 0.0
    out: dict[str, float] = {
        "spearman": rho,
        "spearman_p": rho_p,
        "kendall": tau,
        "kendall_p": tau_p,
        "constant_score": float(constant),
    }
    for k in ks:
        j, tie = jaccard_top_k(truth, score, k)
        out[f"jaccard_{k}"] = j
        out[f"tie_{k}"] = float(tie)
    return out


def rank_ascending(values: np.ndarray) -> np.ndarray:
    """``rankdata(values, 'min')``: rank 1 = lowest value (docs/laf.md, reading R4)."""
    return _st.rankdata(np.asarray(values, dtype=float), method="min").astype(np.int64)


def _average_ranks(S: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (scipy's default tie handling), vectorised over rows."""
    return _st.rankdata(S, method="average", axis=-1)


def batch_metrics(
    truth: np.ndarray, scores: np.ndarray, ks: tuple[int, ...] = DEFAULT_KS
) -> dict[str, np.ndarray]:
    """Spearman, Kendall tau-b and Jaccard top-k of many score vectors ``scores`` (R, n) at once.

    Same definitions as :func:`ranking_metrics` (paper Eqs. 4-6), without p-values; rows with a
    constant score get rho = tau = 0 (docs/laf.md, reading R6) and ``constant_score = 1``.
    """
    t = np.asarray(truth, dtype=float)
    S = np.atleast_2d(np.asarray(scores, dtype=float))
    R, n = S.shape
    if t.shape != (n,):
        raise ValueError(f"truth {t.shape} does not match scores {S.shape}")
    constant = np.ptp(S, axis=1) == 0
    out: dict[str, np.ndarray] = {"constant_score": constant.astype(float)}
    if np.ptp(t) == 0:
        out["spearman"] = np.full(R, np.nan)
        out["kendall"] = np.full(R, np.nan)
    else:
        rt = _average_ranks(t)
        rs = _average_ranks(S)
        rt_c = rt - rt.mean()
        rs_c = rs - rs.mean(axis=1, keepdims=True)
        denom = np.sqrt((rt_c @ rt_c) * (rs_c * rs_c).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = (rs_c @ rt_c) / denom
        iu = np.triu_indices(n, 1)
        st = np.sign(t[:, None] - t[None, :])[iu]  # (P,)
        ss = np.sign(S[:, :, None] - S[:, None, :])[:, iu[0], iu[1]]  # (R, P)
        n0 = iu[0].size
        n1 = int((st == 0).sum())
        n2 = (ss == 0).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = (ss * st).sum(axis=1) / np.sqrt((n0 - n1) * (n0 - n2))
        out["spearman"] = np.where(constant, 0.0, rho)
        out["kendall"] = np.where(constant, 0.0, tau)
    order_t = np.lexsort((np.arange(n), -t))
    order_s = np.argsort(-S, axis=1, kind="stable")
    s_sorted = np.take_along_axis(S, order_s, axis=1)
    for k in ks:
        if k >= n:
            out[f"jaccard_{k}"] = np.full(R, np.nan)
            out[f"tie_{k}"] = np.zeros(R)
            continue
        in_t = np.zeros(n, dtype=bool)
        in_t[order_t[:k]] = True
        inter = in_t[order_s[:, :k]].sum(axis=1)
        out[f"jaccard_{k}"] = inter / (2 * k - inter)
        tie_t = t[order_t[k - 1]] == t[order_t[k]]
        out[f"tie_{k}"] = ((s_sorted[:, k - 1] == s_sorted[:, k]) | tie_t).astype(float)
    return out
