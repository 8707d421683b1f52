"""Statistics shared by the studies: rank correlations, paired tests and effect sizes.

Thin, validated wrappers over scipy.stats so every study reports the same quantities the same
way (LaF spec section 4, PACE spec section 4.4, metamorphic spec RQ2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _st


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


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho with average ranks for ties (LaF spec 4.2); NaN if either is constant."""
    a, b = _pair(a, b, "spearman")
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(_st.spearmanr(a, b).statistic)


def kendall_tau_b(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b, tie-corrected (LaF spec 4.3); NaN if either is constant."""
    a, b = _pair(a, b, "kendall_tau_b")
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(_st.kendalltau(a, b, variant="b").statistic)


def wilcoxon_paired(a: np.ndarray, b: np.ndarray) -> TestResult:
    """Two-sided paired Wilcoxon signed-rank test (PACE spec 4.4); NaN when all differences are 0."""
    a, b = _pair(a, b, "wilcoxon_paired")
    if np.all(a - b == 0):
        return TestResult(float("nan"), float("nan"))
    res = _st.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided")
    return TestResult(float(res.statistic), float(res.pvalue))


def vargha_delaney_a12(a: np.ndarray, b: np.ndarray) -> float:
    """Vargha-Delaney A12: probability that a draw from ``a`` exceeds one from ``b`` (ties 1/2).

    Computed from the Mann-Whitney U statistic, A12 = U_a / (n_a n_b) (PACE spec 4.4).
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
    """Chi-square test of independence on a contingency table and Cramer's V (metamorphic RQ2)."""
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or min(t.shape) < 2:
        raise ValueError(f"chi_square_cramers_v: need a 2-D table of at least 2x2, got {t.shape}")
    res = _st.chi2_contingency(t, correction=False)
    n = t.sum()
    v = float(np.sqrt(res.statistic / (n * (min(t.shape) - 1)))) if n > 0 else float("nan")
    return TestResult(float(res.statistic), float(res.pvalue)), v
