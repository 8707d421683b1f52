"""Quantities of the research questions (the paper's Sections 5 and 6; docs/metamorphic.md,
readings R8-R12): summary rows, size bins, Cochran sample sizes, chi-square/Cramer's V, exact
Wilcoxon, Fig. 6 frequencies, oracle validity from hidden masks and MR-2 recall against
counterfactual ground truth.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as st

from labelfree.metamorphic.oracle import Verdicts

MRS = ("MR1", "MR2", "MR1&2")


def _flags(v: Verdicts) -> dict[str, np.ndarray]:
    return {"MR1": v.mr1, "MR2": v.mr2, "MR1&2": v.mr12}


def summary_row(v: Verdicts) -> dict[str, Any]:
    """One row in the authors' CSV layout (reading R8): ``acc``, ``acc_num`` and, for MR1, MR2 and
    MR1&2, the number flagged over all images, its accuracy and correct/incorrect counts, the same
    with a ``non_`` prefix, plus ``{mr}_ratio`` = flagged AND correct / #correct (Tables 5-6)."""
    n = len(v)
    correct = v.correct
    row: dict[str, Any] = {"n": n, "acc": float(correct.mean()) if n else float("nan"),
                           "acc_num": int(correct.sum())}
    for mr, flag in _flags(v).items():
        for prefix, part in (("", flag), ("non_", ~flag)):
            k = int(part.sum())
            c = int((part & correct).sum())
            row[f"{prefix}{mr}"] = k
            row[f"{prefix}{mr}_correct"] = c
            row[f"{prefix}{mr}_incorrect"] = k - c
            row[f"{prefix}{mr}_acc"] = c / k if k else float("nan")
        row[f"{mr}_ratio"] = row[f"{mr}_correct"] / row["acc_num"] if row["acc_num"] else float("nan")
    return row


# --------------------------------------------------------------------------------------------
# RQ1: Cochran sample size and oracle validity
# --------------------------------------------------------------------------------------------


def cochran(population: int, z: float = 1.96, e: float = 0.05, p: float = 0.5) -> int:
    """Cochran's sample size with finite-population correction, rounded up (RQ1; reading R11)."""
    if population <= 0:
        return 0
    n0 = z * z * p * (1 - p) / (e * e)
    return int(math.ceil(n0 / (1 + (n0 - 1) / population)))


def instance_coverage(region: np.ndarray, instances: np.ndarray) -> np.ndarray:
    """Fraction of each hidden instance inside R: (N, M); NaN for absent (empty) instances.

    ``region`` (N, H, W) bool; ``instances`` (N, M, H, W) bool.
    """
    inst = np.asarray(instances, dtype=bool)
    size = inst.sum(axis=(2, 3)).astype(np.float64)
    inside = (inst & np.asarray(region, dtype=bool)[:, None]).sum(axis=(2, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(size > 0, inside / np.maximum(size, 1), np.nan)


def followup_validity(
    region: np.ndarray, instances: np.ndarray, threshold: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Oracle validity of the follow-ups (reading R10): MR-1 valid iff R covers >= 95% of every
    target-class instance; MR-2 valid iff some instance keeps >= 95% of its pixels inside R."""
    cov = instance_coverage(region, instances)
    present = ~np.isnan(cov)
    c = np.nan_to_num(cov, nan=0.0)
    mr1_valid = ((c >= threshold) | ~present).all(axis=1) & present.any(axis=1)
    mr2_valid = ((c >= threshold) & present).any(axis=1)
    return mr1_valid, mr2_valid


# --------------------------------------------------------------------------------------------
# RQ2: 3 vs 15 colours
# --------------------------------------------------------------------------------------------


def contingency(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """2x2 table [[b&a, b&~a], [~b&a, ~b&~a]] (rows: verdict b, columns: verdict a; Table 4)."""
    a = np.asarray(a, dtype=bool)
    b = np.asarray(b, dtype=bool)
    return np.array([[np.sum(b & a), np.sum(b & ~a)], [np.sum(~b & a), np.sum(~b & ~a)]])


def cramers_v(table: np.ndarray, yates: bool = True) -> tuple[float, float, float]:
    """(chi2, p, V) of a contingency table; Yates correction by default (matches Table 4, [csv]).

    Degenerate tables (a zero row or column) give (nan, nan, nan).
    """
    t = np.asarray(table, dtype=np.float64)
    if (t.sum(axis=0) == 0).any() or (t.sum(axis=1) == 0).any():
        return float("nan"), float("nan"), float("nan")
    chi2, p, _, _ = st.chi2_contingency(t, correction=yates)
    v = math.sqrt(chi2 / (t.sum() * (min(t.shape) - 1)))
    return float(chi2), float(p), float(v)


# --------------------------------------------------------------------------------------------
# RQ3 Fig. 6, RQ4 size bins, RQ5 Wilcoxon, RQ6 Pearson
# --------------------------------------------------------------------------------------------


def flag_frequency(flags: np.ndarray) -> np.ndarray:
    """Fig. 6: ``flags`` (n_models, N) of violated AND correct -> (n_models,) share of inputs
    flagged by exactly n = 1..n_models models among inputs flagged by at least one."""
    f = np.asarray(flags, dtype=bool)
    k = f.sum(axis=0)
    hit = k[k > 0]
    counts = np.bincount(hit, minlength=f.shape[0] + 1)[1:]
    return counts / hit.size if hit.size else np.full(f.shape[0], np.nan)


def size_bin(ratio: np.ndarray, width: float = 0.05, n_bins: int = 21) -> np.ndarray:
    """``floor(ratio / width)``, robust to float error (0.95 -> 19, 1.0 -> 20; reading R9)."""
    r = np.asarray(ratio, dtype=np.float64)
    b = np.floor(np.round(r / width, 9)).astype(np.int64)
    return np.clip(b, 0, n_bins - 1)


def size_bin_rates(
    ratio: np.ndarray, flagged_correct: np.ndarray, width: float = 0.05, n_bins: int = 21,
    x_position: str = "midpoint",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per bin: (x position, rate = flagged AND correct / all images in the bin, count).

    Empty bins give NaN. ``x_position`` ``midpoint`` (paper; last bin at 1.0) or ``left``.
    """
    b = size_bin(ratio, width, n_bins)
    count = np.bincount(b, minlength=n_bins)
    hits = np.bincount(b, weights=np.asarray(flagged_correct, dtype=np.float64), minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(count > 0, hits / np.maximum(count, 1), np.nan)
    edges = np.arange(n_bins) * width
    x = edges + width / 2 if x_position == "midpoint" else edges.copy()
    if x_position == "midpoint":
        x[-1] = min(1.0, x[-1])
    return x, rate, count


def wilcoxon_greater(a: np.ndarray, b: np.ndarray) -> float:
    """Exact one-sided paired Wilcoxon p for a > b (RQ5; 18 positive differences -> 2^-18)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = a - b
    if d.size == 0 or np.all(d == 0):
        return float("nan")
    method = "exact" if d.size <= 50 and np.unique(np.abs(d[d != 0])).size == np.sum(d != 0) else "auto"
    return float(st.wilcoxon(a, b, alternative="greater", method=method).pvalue)


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson r (Fig. 10); NaN when fewer than 3 points or either side is constant."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(st.pearsonr(a, b).statistic)


# --------------------------------------------------------------------------------------------
# Beyond the paper: MR-2 recall against counterfactual ground truth (reading R10, check H)
# --------------------------------------------------------------------------------------------


def counterfactual_drivers(
    pred_cf: np.ndarray, cf_family: np.ndarray, pred: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(background_driven, object_driven) per source (reading R10).

    ``pred_cf`` (N, 3) predictions on the re-renders whose backgrounds are families
    ``cf_family`` (N, 3) != label; background-driven iff the prediction moves to k' in >= 2 of 3;
    object-driven iff the source prediction survives all 3.
    """
    pred_cf = np.asarray(pred_cf)
    moved = (pred_cf == np.asarray(cf_family)).sum(axis=1)
    n = pred_cf.shape[1]
    bg_driven = moved >= n // 2 + 1
    obj_driven = (pred_cf == np.asarray(pred)[:, None]).all(axis=1)
    return bg_driven, obj_driven


def mr2_recall(
    mr2: np.ndarray, correct: np.ndarray, bg_driven: np.ndarray, obj_driven: np.ndarray
) -> dict[str, float]:
    """Recall of MR-2 on background-driven correct inferences and its false-alarm rate on
    object-driven correct ones (check H, reading R12)."""
    mr2 = np.asarray(mr2, dtype=bool)
    bgc = np.asarray(bg_driven, dtype=bool) & correct
    obc = np.asarray(obj_driven, dtype=bool) & correct
    return {
        "n_correct": int(np.sum(correct)),
        "n_bg_driven": int(bgc.sum()),
        "n_obj_driven": int(obc.sum()),
        "recall": float(mr2[bgc].mean()) if bgc.any() else float("nan"),
        "false_alarm": float(mr2[obc].mean()) if obc.any() else float("nan"),
        "precision_vs_cf": float(bgc[mr2 & correct].mean()) if (mr2 & correct).any() else float("nan"),
    }
