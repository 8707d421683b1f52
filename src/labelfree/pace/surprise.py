"""Likelihood-based surprise adequacy (LSA) and CSS-COV, PACE's Table 12 baseline
(docs/pace.md, reading R12).

LSA (Kim, Feldt, Yoo, "Guiding Deep Learning System Testing using Surprise Adequacy", ICSE 2019,
section 3.1): with ``alpha(x)`` the activation trace of input ``x`` at a layer and ``T`` the
training inputs, a Gaussian kernel density estimate

    f_hat(x) = 1 / |T_c| * sum_{x_i in T_c} K_H(alpha(x) - alpha(x_i))            (Eq. 1)

and ``LSA(x) = -log f_hat(x)`` (Eq. 2): higher = more surprising. For a classifier the KDE of
``x`` uses only ``T_c``, the training inputs of the class ``c`` predicted for ``x``. As in the
authors' SADL code (``coinse/sadl`` at 23a28a2, ``sa.py``: ``_get_kdes``, ``fetch_lsa``; the same
functions in ``Lizn-zn/DNNOpAcc`` at e0804c2, ``SA-exp/sa.py``, whose LSA the CSS-COV script
stratifies):

- a training input belongs to the class the model *predicts* for it (``train_pred``);
- activation columns whose (population) variance is below ``var_threshold`` (1e-5) within the
  training inputs of any class are removed from every class;
- each class's density is ``scipy.stats.gaussian_kde`` with its default (Scott's) bandwidth,
  ``H = cov(T_c) * n_c ** (-2 / (d + 4))``, evaluated with ``logpdf``.

The layer is the LHL (reading R12; the DNNOpAcc script took ``model.layers[-3]``, the same
layer as PACE's LHL, reading R1).

Cases the SADL code does not handle (it raises): a class no training input is predicted as,
and a class whose training traces span a lower-dimensional subspace (too few inputs for the
trace dimension: singular covariance). Inputs predicted as such a class get ``LSA = +inf``
(no density: maximally surprising); ``fit_lsa`` reports those classes in ``LsaModel.missing``.

CSS-COV (Table 12) is CSS with the strata taken on LSA instead of confidence: 80 %
least surprising, next 10 %, 10 % most surprising (``SA-exp/strata.py`` sorts LSA ascending and
cuts at 80 % and 90 % the same way); same allocation, schedule and estimator as CSS. That script's
allocation (0.4, 0.4, 0.2) and weights (0.1, 0.1, 0.8) are CSS's compat option (``pace.css``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.stats import gaussian_kde

from .baselines import css, css_strata

#: SADL's default ``var_threshold`` (``run.py``).
VAR_THRESHOLD = 1e-5


@dataclass
class LsaModel:
    """Per-class KDEs over the kept activation columns (``fit_lsa``)."""

    kept: np.ndarray  # indices of the activation columns kept (variance >= threshold everywhere)
    kdes: dict[int, object] = field(default_factory=dict)  # class -> scipy.stats.gaussian_kde
    missing: dict[int, str] = field(default_factory=dict)  # class -> why it has no KDE
    sizes: dict[int, int] = field(default_factory=dict)  # class -> training inputs predicted as it


def fit_lsa(train_ats: np.ndarray, train_pred: np.ndarray, num_classes: int,
            var_threshold: float = VAR_THRESHOLD) -> LsaModel:
    """Per-class Gaussian KDEs of the training activation traces (Eq. 1, SADL ``_get_kdes``)."""

    ats = np.asarray(train_ats, dtype=np.float64).reshape(len(train_ats), -1)
    pred = np.asarray(train_pred, dtype=np.int64)
    if len(pred) != len(ats):
        raise ValueError(f"fit_lsa: {len(ats)} activation traces but {len(pred)} predictions")
    if len(pred) and (pred.min() < 0 or pred.max() >= num_classes):
        raise ValueError(f"fit_lsa: predicted classes outside 0..{num_classes - 1}")
    low = np.zeros(ats.shape[1], dtype=bool)
    for c in range(num_classes):
        rows = ats[pred == c]
        if len(rows):
            low |= rows.var(axis=0) < var_threshold
    model = LsaModel(kept=np.flatnonzero(~low))
    for c in range(num_classes):
        rows = ats[pred == c][:, model.kept]
        model.sizes[c] = len(rows)
        if len(rows) == 0:
            model.missing[c] = "no training input is predicted as this class"
            continue
        if model.kept.size == 0:
            model.missing[c] = f"every activation column has variance < {var_threshold}"
            continue
        try:
            model.kdes[c] = gaussian_kde(rows.T)
        except (np.linalg.LinAlgError, ValueError) as err:  # singular covariance, n <= 1
            model.missing[c] = f"gaussian_kde failed ({len(rows)} inputs, {model.kept.size} columns): {err}"
    return model


def lsa(model: LsaModel, ats: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """``LSA(x) = -log f_hat_c(x)`` (Eq. 2) with ``c`` the class predicted for ``x``, evaluated
    per class in one vectorised ``logpdf`` call; ``+inf`` for classes without a KDE."""
    ats = np.asarray(ats, dtype=np.float64).reshape(len(ats), -1)[:, model.kept]
    pred = np.asarray(pred, dtype=np.int64)
    out = np.full(len(ats), np.inf)
    for c, kde in model.kdes.items():
        rows = np.flatnonzero(pred == c)
        if len(rows):
            out[rows] = -kde.logpdf(ats[rows].T)
    return out


def css_cov(
    scores: np.ndarray, surprise: np.ndarray, budgets: list[int], reps: int,
    rng: np.random.Generator, cuts: tuple[float, ...] = (0.8, 0.9),
    alloc: tuple[float, ...] = (0.2, 0.4, 0.4), init: int = 30, step: int = 5,
    weights: tuple[float, ...] | None = None,
) -> np.ndarray:
    """CSS-COV (Table 12; reading R12): CSS's scheme on surprise strata. Inputs ranked by
    ascending LSA (ties by index): stratum 0 = the 80 % least surprising, 1 = next 10 %, 2 = the
    10 % most surprising; estimate ``sum_h W_h acc_h`` with ``W_h = N_h / N`` unless
    ``weights``. ``+inf`` (no density) ranks as most surprising."""
    # css_strata ranks by descending "confidence": -LSA puts the least surprising first
    key = -np.asarray(surprise, dtype=np.float64)
    return css(scores, key, budgets, reps, rng, cuts, alloc, init, step, weights)


def strata_summary(name: str, scores: np.ndarray, surprise: np.ndarray, model: LsaModel,
                   cuts: tuple[float, ...] = (0.8, 0.9)) -> dict:
    """Per-subject diagnostics: columns kept, classes without a KDE, inputs with infinite LSA,
    and the accuracy within each surprise stratum (0 = least surprising)."""
    strata = css_strata(-np.asarray(surprise, dtype=np.float64), cuts)
    out = {"subject": name, "columns_kept": int(model.kept.size),
           "classes_without_kde": " ".join(str(c) for c in sorted(model.missing)),
           "inputs_lsa_inf": int(np.isinf(surprise).sum()), "n": len(scores)}
    for h in range(len(cuts) + 1):
        m = strata == h
        out[f"stratum{h}_n"] = int(m.sum())
        out[f"stratum{h}_accuracy"] = float(np.mean(scores[m])) if m.any() else np.nan
    return out
