"""Estimator, error metric, improvement, aggregations and statistics (docs/pace.md, readings R8,
R14)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from labelfree.stats import a12_magnitude, vargha_delaney_a12, wilcoxon_paired


def item_scores_classification(logits: np.ndarray, labels: np.ndarray, top: int = 1) -> np.ndarray:
    """``correct_i`` (1.0/0.0): argmax (or top-k) prediction equals the label (reading R8)."""
    logits = np.asarray(logits)
    labels = np.asarray(labels)
    if top == 1:
        return (logits.argmax(axis=1) == labels).astype(np.float64)
    topk = np.argpartition(-logits, top - 1, axis=1)[:, :top]
    return (topk == labels[:, None]).any(axis=1).astype(np.float64)


def item_scores_regression(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``1 - (y_hat_i - y_i)^2``: its mean is the regression "accuracy" 1 - MSE (reading R8)."""
    return 1.0 - (np.asarray(pred, float).ravel() - np.asarray(target, float).ravel()) ** 2


def regression_accuracy(mse: float | np.ndarray) -> float | np.ndarray:
    """Table 1 mapping: accuracy = 1 - MSE (reading R8)."""
    return 1.0 - np.asarray(mse, dtype=float)


def estimate(scores: np.ndarray, indices: np.ndarray) -> float:
    """acc_hat = mean of item scores over the selected (labelled) inputs."""
    return float(np.asarray(scores, float)[np.asarray(indices)].mean())


def mse_percent(estimates: np.ndarray, truth: float) -> np.ndarray:
    """The paper's "MSE" (Equation 6; reading R14): 100 * sqrt(mean_r (acc_hat_r - acc)^2), per budget column."""
    e = np.atleast_2d(np.asarray(estimates, dtype=float))
    return 100.0 * np.sqrt(((e - truth) ** 2).mean(axis=0))


def improvement(mse_a: np.ndarray, mse_pace: np.ndarray) -> float:
    """↑Im (reading R14): mean over budgets of (MSE_A - MSE_PACE) / MSE_A x 100."""
    a = np.asarray(mse_a, float)
    p = np.asarray(mse_pace, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(a > 0, (a - p) / a, 0.0)
    return float(100.0 * rel.mean())


def best_counts(wide: pd.DataFrame, approaches: list[str]) -> dict[str, int]:
    """Cells in which each approach has the minimum MSE (ties credit all), reading R14.

    ``wide``: rows (subject, approach), columns budgets.
    """
    counts = dict.fromkeys(approaches, 0)
    for _, g in wide.groupby(level=0):
        g = g.droplevel(0)
        g = g.loc[[a for a in approaches if a in g.index]]
        mins = g.min(axis=0)
        for a in g.index:
            counts[a] += int(np.isclose(g.loc[a], mins, rtol=0, atol=1e-12).sum())
    return counts


def stat_tests(per_subject: dict[str, np.ndarray], pace: np.ndarray) -> dict[str, dict]:
    """Table 4 statistics for one budget: paired Wilcoxon and unpaired Vargha-Delaney A12
    of each competitor's per-subject MSE against PACE's (reading R14), over the subjects where the
    competitor applies (NaN = not applicable). Reproduces Table 4 from Tables 2-3."""
    out = {}
    pace = np.asarray(pace, float)
    for name, vals in per_subject.items():
        vals = np.asarray(vals, float)
        ok = np.isfinite(vals) & np.isfinite(pace)
        if ok.sum() < 2:
            out[name] = {"p": np.nan, "A12": np.nan, "effect": "n/a", "subjects": int(ok.sum())}
            continue
        w = wilcoxon_paired(vals[ok], pace[ok])
        # unpaired A12 over all pairs of the subjects where X applies (17 x 17 for CSS in Table 4)
        a = vargha_delaney_a12(vals[ok], pace[ok])
        out[name] = {"p": w.pvalue, "A12": a, "effect": a12_magnitude(a), "subjects": int(ok.sum())}
    return out
