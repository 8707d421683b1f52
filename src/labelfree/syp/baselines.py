"""Dataset-level baselines with linear regression on meta-sets (paper Section 4.1, Table 1;
docs/syp.md, reading R9).

Each baseline turns a set into one scalar score; a ``LinearRegression`` fitted on the meta-sets maps
score -> accuracy (percent). ConfScore, Entropy, ATC (kit version), FD and Rotation are the paper's;
DoC (difference of confidences) is a direct estimate, marked "not in paper".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from labelfree.numerics import entropy
from labelfree.syp.indicators import atc_index

REGRESSION_METHODS = ("Rotation", "ConfScore", "Entropy", "ATC", "FD")


def conf_score(probs: np.ndarray) -> float:
    """ConfScore: mean of the max softmax probability (Hendrycks & Gimpel)."""
    return float(np.asarray(probs).max(axis=1).mean())


def entropy_score(probs: np.ndarray) -> float:
    """Entropy baseline: mean per-sample entropy (Guillory et al.)."""
    return float(entropy(probs).mean())


def atc_kit_threshold(id_probs: np.ndarray, id_labels: np.ndarray) -> float:
    """Kit ATC threshold: ``s = -H``; ``t_s = sorted(s)[ceil(a N)]`` on the clean ID test set."""
    correct = int(np.sum(np.asarray(id_probs).argmax(axis=1) == id_labels))
    s = np.sort(-entropy(id_probs))
    return float(s[atc_index(correct, len(s))])


def atc_kit_score(probs: np.ndarray, t_s: float) -> float:
    """Kit ATC score: percentage of samples with ``-H < t_s`` (the kit's tail: docs/syp.md,
    reading R9)."""
    return float(100.0 * np.mean(-entropy(probs) < t_s))


def atc_garg_threshold(id_probs: np.ndarray, id_labels: np.ndarray) -> float:
    """ATC as in Garg et al. (not in the SYP paper; docs/syp.md, reading R9): on ``s = -H``
    the threshold ``t'`` with fraction(``s < t'``) = clean error, i.e. ``sorted(s)[round(err N)]``."""
    err = 1.0 - float(np.mean(np.asarray(id_probs).argmax(axis=1) == id_labels))
    s = np.sort(-entropy(id_probs))
    return float(s[min(int(round(err * len(s))), len(s) - 1)])


def atc_garg_estimate(probs: np.ndarray, t: float) -> float:
    """Garg et al.'s ATC accuracy estimate (percent): fraction of samples with ``-H >= t'``."""
    return float(100.0 * np.mean(-entropy(probs) >= t))


def doc_estimate(probs: np.ndarray, id_probs: np.ndarray, id_acc: float) -> float:
    """DoC (not in paper): source accuracy minus the drop in mean confidence, in percent."""
    drop = conf_score(id_probs) - conf_score(probs)
    return float(100.0 * (id_acc - drop))


def rotation_labels(n: int) -> np.ndarray:
    """Angle labels for [0 deg; 90; 180; 270] blocks of ``n`` images each."""
    return np.repeat(np.arange(4), n)


@dataclass(frozen=True)
class RotationHead:
    """A 4-way linear head on frozen penultimate features predicting the rotation (docs/syp.md,
    reading R9)."""

    clf: Any  # a fitted sklearn.linear_model.LogisticRegression

    def score(self, feats_by_angle: np.ndarray) -> float:
        """Rotation accuracy (percent) over ``(4 n, D)`` features stacked as 0/90/180/270 blocks."""
        n = len(feats_by_angle) // 4
        pred = self.clf.predict(feats_by_angle)
        return float(100.0 * np.mean(pred == rotation_labels(n)))


def fit_rotation_head(feats_by_angle: np.ndarray, seed: int = 0, c: float = 1.0) -> RotationHead:
    """Train the rotation head on the classifier's training set, all four rotations, cross-entropy,
    backbone frozen (our reading for the kit's undocumented heads: docs/syp.md, reading R9)."""
    # deferred: scikit-learn takes seconds to import (5-7 s on the shared 2-core machine); only
    # the indicator step of the syp_oracle job fits a head, syp_tables and the scorecard import
    # this module without it
    from sklearn.linear_model import LogisticRegression

    n = len(feats_by_angle) // 4
    if n * 4 != len(feats_by_angle):
        raise ValueError(f"rotation features: {len(feats_by_angle)} rows is not 4 blocks")
    clf = LogisticRegression(C=c, max_iter=2000, random_state=seed)
    clf.fit(np.asarray(feats_by_angle, dtype=np.float64), rotation_labels(n))
    return RotationHead(clf)


@dataclass(frozen=True)
class LinearFit:
    """score -> accuracy (percent) regression fitted on meta-sets."""

    slope: float
    intercept: float
    r2: float

    def predict(self, scores: np.ndarray) -> np.ndarray:
        return np.round(self.slope * np.asarray(scores, dtype=np.float64) + self.intercept, 6)


def fit_linear(scores: np.ndarray, acc: np.ndarray) -> LinearFit:
    """``sklearn.linear_model.LinearRegression`` of accuracy (percent) on one scalar score."""
    # deferred: scikit-learn, as in fit_rotation_head
    from sklearn.linear_model import LinearRegression

    s = np.asarray(scores, dtype=np.float64).reshape(-1, 1)
    a = np.asarray(acc, dtype=np.float64)
    if len(s) < 2:
        raise ValueError(f"fit_linear: need at least 2 meta-sets, got {len(s)}")
    reg = LinearRegression().fit(s, a)
    return LinearFit(float(reg.coef_[0]), float(reg.intercept_), float(reg.score(s, a)))
