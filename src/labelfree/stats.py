"""Statistics shared by the studies and the scorecard: rank correlations, paired tests and
effect sizes.

Thin, validated wrappers over scipy.stats so every study reports the same quantities the same
way (LaF paper Section 4.5 for the correlations, PACE paper Section 5.1 for the Wilcoxon test and
A12, the metamorphic paper's RQ2 for the chi-square test).

Rank correlations, one rule (:func:`spearman`, :func:`kendall_tau_b`): the value is NaN when the
pair has fewer than :data:`MIN_PAIRS` values, when either input holds a non-finite value (NaN or
+-inf: a failed or missing score is not ranked; a caller that wants the complete pairs only
selects them first), or when either input is constant (there is no order to compare); otherwise
it is scipy's statistic, with average ranks for ties.

The two statistics are computed here with scipy's own arithmetic (``scipy.stats.spearmanr``:
average ranks, then ``np.corrcoef`` of the stacked ranks; ``scipy.stats.kendalltau``: the integer
pair counts, then ``(con - dis) / sqrt(tot - xtie) / sqrt(tot - ytie)``), so the values are
scipy's bit for bit, without scipy's p-values: for up to 33 untied values ``kendalltau`` computes
an exact p-value that nobody here reads, and both wrappers cost milliseconds per call, which a
scorecard pays thousands of times. Above :data:`PAIRWISE_MAX` values Kendall's tau goes to scipy
(its O(n log n) count; the O(n^2) pair table here would not fit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

#: Fewest pairs with a defined rank correlation (two values: +-1, the order of the pair).
MIN_PAIRS = 2

#: Most values for which :func:`kendall_tau_b` counts pairs in an n x n table (8 MB of int8).
PAIRWISE_MAX = 2048


@dataclass(frozen=True)
class TestResult:
    """A test statistic with its p-value (NaN when the test is undefined, e.g. all ties)."""

    statistic: float
    pvalue: float


def _pair(a: np.ndarray, b: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"{name}: inputs differ in length ({a.size} vs {b.size})")
    return a, b


def rank_correlation_defined(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether :func:`spearman` and :func:`kendall_tau_b` are defined on ``a``, ``b`` (the
    module's rule: at least :data:`MIN_PAIRS` pairs, every value finite, neither constant)."""
    a, b = _pair(a, b, "rank correlation")
    return bool(a.size >= MIN_PAIRS and np.isfinite(a).all() and np.isfinite(b).all()
                and np.ptp(a) > 0 and np.ptp(b) > 0)


def average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``a`` with ties given their average rank (``scipy.stats.rankdata``'s
    'average' method; every rank is a half-integer, so any exact method gives the same bits)."""
    a = np.asarray(a).ravel()
    order = np.argsort(a, kind="mergesort")
    sorted_a = a[order]
    new = np.r_[True, sorted_a[1:] != sorted_a[:-1]]
    dense = np.empty(a.size, dtype=np.intp)
    dense[order] = new.cumsum()
    bounds = np.r_[np.flatnonzero(new), a.size]
    return 0.5 * (bounds[dense] + bounds[dense - 1] + 1)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho with average ranks for ties (``scipy.stats.spearmanr``'s statistic,
    same arithmetic); NaN by the module's rule (too few pairs, a non-finite value, a constant
    input)."""
    if not rank_correlation_defined(a, b):
        return float("nan")
    a, b = _pair(a, b, "spearman")
    ranked = np.column_stack((average_ranks(a), average_ranks(b)))
    return float(np.corrcoef(ranked, rowvar=False)[1, 0])


def _tied_pairs(a: np.ndarray) -> int:
    """Pairs of equal values in ``a``: sum over tie groups of c (c - 1) / 2."""
    _, counts = np.unique(a, return_counts=True)
    counts = counts.astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


def kendall_tau_b(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b, tie-corrected (``scipy.stats.kendalltau``'s variant-b statistic, same
    integer counts and final expression); NaN by the module's rule (too few pairs, a
    non-finite value, a constant input)."""
    if not rank_correlation_defined(a, b):
        return float("nan")
    a, b = _pair(a, b, "kendall_tau_b")
    if a.size > PAIRWISE_MAX:
        return float(_st.kendalltau(a, b, variant="b").statistic)
    upper = np.triu(np.ones((a.size, a.size), dtype=bool), 1)
    sa = np.sign(a[:, None] - a[None, :]).astype(np.int8)
    sb = np.sign(b[:, None] - b[None, :]).astype(np.int8)
    con_minus_dis = int((sa * sb)[upper].sum(dtype=np.int64))
    tot = (a.size * (a.size - 1)) // 2
    tau = con_minus_dis / np.sqrt(tot - _tied_pairs(a)) / np.sqrt(tot - _tied_pairs(b))
    return float(np.minimum(1.0, max(-1.0, tau)))


def wilcoxon_paired(a: np.ndarray, b: np.ndarray) -> TestResult:
    """Two-sided paired Wilcoxon signed-rank test (PACE paper Section 5.1); NaN when all
    differences are 0."""
    a, b = _pair(a, b, "wilcoxon_paired")
    if np.all(a - b == 0):
        return TestResult(float("nan"), float("nan"))
    res = _st.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided")
    return TestResult(float(res.statistic), float(res.pvalue))


def vargha_delaney_a12(a: np.ndarray, b: np.ndarray) -> float:
    """Vargha-Delaney A12: probability that a draw from ``a`` exceeds one from ``b`` (ties 1/2).

    Computed from the Mann-Whitney U statistic, A12 = U_a / (n_a n_b) (PACE paper Section 5.1).
    """
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    if a.size == 0 or b.size == 0:
        raise ValueError("vargha_delaney_a12: both samples must be non-empty")
    u = _st.mannwhitneyu(a, b, alternative="two-sided").statistic
    return float(u / (a.size * b.size))


def a12_magnitude(a12: float) -> str:
    """Vargha-Delaney thresholds on |A12 - 0.5|: negligible/small/medium/large."""
    d = abs(a12 - 0.5)
    if d < 0.06:
        return "negligible"
    if d < 0.14:
        return "small"
    if d < 0.21:
        return "medium"
    return "large"


def chi_square_cramers_v(table: np.ndarray) -> tuple[TestResult, float]:
    """Chi-square test of independence on a contingency table and Cramer's V (metamorphic paper, RQ2)."""
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or min(t.shape) < 2:
        raise ValueError(f"chi_square_cramers_v: need a 2-D table of at least 2x2, got {t.shape}")
    res = _st.chi2_contingency(t, correction=False)
    n = t.sum()
    v = float(np.sqrt(res.statistic / (n * (min(t.shape) - 1)))) if n > 0 else float("nan")
    return TestResult(float(res.statistic), float(res.pvalue)), v
