"""LSA (Kim et al. ICSE 2019, Eq. 1-2, SADL's per-class KDE) and CSS-COV (PACE spec 3.3, Table 12)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from labelfree.pace.baselines import css_sizes
from labelfree.pace.report import table_css_cov
from labelfree.pace.run import StudyParams, Subject, css_cov_rows
from labelfree.pace.surprise import css_cov, fit_lsa, lsa, strata_summary


def test_lsa_one_dimension_known_answer():
    """Hand formula: training traces {0, 1, 2} of class 0, Scott's bandwidth
    h^2 = s^2 n^(-2/(d+4)) with the unbiased s^2 = 1, n = 3, d = 1 (scipy's gaussian_kde default,
    the SADL code's KDE); LSA(x) = -log((1/n) sum_i N(x; x_i, h^2)) (Eq. 1-2)."""
    model = fit_lsa(np.array([[0.0], [1.0], [2.0]]), np.array([0, 0, 0]), num_classes=1)
    h2 = 1.0 * 3 ** (-2 / 5)
    for x in (1.0, 0.0, 4.5):
        dens = sum(math.exp(-((x - xi) ** 2) / (2 * h2)) / math.sqrt(2 * math.pi * h2)
                   for xi in (0.0, 1.0, 2.0)) / 3
        got = lsa(model, np.array([[x]]), np.array([0]))[0]
        assert got == pytest.approx(-math.log(dens), rel=1e-12)
    # farther from the training traces = more surprising
    s = lsa(model, np.array([[1.0], [3.0], [6.0]]), np.zeros(3, int))
    assert s[0] < s[1] < s[2]


def test_lsa_multivariate_per_class_and_variance_filter():
    """Eq. 1 in d = 2 evaluated independently (bandwidth matrix H = cov * n^(-2/6)); each input
    uses the KDE of its predicted class only; a column constant within a class is dropped from
    every class (SADL ``_get_kdes``), so adding one changes nothing."""
    rng = np.random.default_rng(0)
    a = rng.normal(0.0, 1.0, (40, 2))
    b = rng.normal(5.0, 2.0, (30, 2))
    ats = np.vstack([a, b])
    pred = np.array([0] * 40 + [1] * 30)
    x = np.array([[0.5, -0.2], [5.0, 4.0], [0.5, -0.2]])
    xp = np.array([0, 1, 1])
    model = fit_lsa(ats, pred, num_classes=2)
    got = lsa(model, x, xp)

    def eq1(train, pt):
        n, d = train.shape
        h = np.cov(train.T) * n ** (-2 / (d + 4))
        diff = pt - train
        q = np.einsum("ij,jk,ik->i", diff, np.linalg.inv(h), diff)
        return -np.log(np.mean(np.exp(-q / 2)) / np.sqrt(np.linalg.det(2 * np.pi * h)))

    want = [eq1(a, x[0]), eq1(b, x[1]), eq1(b, x[2])]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert got[2] > got[0]  # the same point is surprising for class 1, not for class 0

    const = np.hstack([ats, np.where(pred == 0, 3.0, rng.normal(size=70))[:, None]])
    m2 = fit_lsa(const, pred, num_classes=2)
    assert m2.kept.tolist() == [0, 1]
    np.testing.assert_allclose(lsa(m2, np.hstack([x, np.ones((3, 1))]), xp), got, rtol=1e-12)


def test_lsa_classes_without_a_density_are_maximally_surprising():
    """A class no training input is predicted as, and one with fewer inputs than trace
    dimensions (singular covariance): SADL raises; we give their inputs LSA = +inf."""
    rng = np.random.default_rng(1)
    ats = np.vstack([rng.normal(size=(50, 3)), rng.normal(size=(2, 3))])
    pred = np.array([0] * 50 + [1] * 2)
    model = fit_lsa(ats, pred, num_classes=3)
    assert set(model.missing) == {1, 2} and set(model.kdes) == {0}
    assert model.sizes == {0: 50, 1: 2, 2: 0}
    s = lsa(model, rng.normal(size=(3, 3)), np.array([0, 1, 2]))
    assert np.isfinite(s[0]) and np.isinf(s[1:]).all()
    with pytest.raises(ValueError, match="outside 0..2"):
        fit_lsa(ats, np.full(52, 3), num_classes=3)
    with pytest.raises(ValueError, match="52 activation traces but 2 predictions"):
        fit_lsa(ats, np.zeros(2, int), num_classes=3)


def test_css_cov_strata_are_by_ascending_surprise_and_the_estimator_is_exact_on_constant_strata():
    """Spec 3.3 CSS-COV: 80 % least surprising / next 10 % / 10 % most surprising, estimate
    sum_h (N_h / N) acc_h. Scores constant within those strata make every draw's estimate the
    true mean (a reversed ranking mixes the strata and fails); +inf LSA ranks most surprising."""
    n = 200
    rng = np.random.default_rng(2)
    surprise = rng.permutation(n).astype(float)
    surprise[surprise == n - 1] = np.inf
    rank = np.argsort(np.argsort(surprise))  # 0 = least surprising
    scores = np.where(rank < 160, 1.0, np.where(rank < 180, 0.0, 0.5))
    budgets = [30, 50, 100]
    est = css_cov(scores, surprise, budgets, reps=20, rng=np.random.default_rng(3))
    assert est.shape == (20, 3)
    np.testing.assert_allclose(est, scores.mean(), rtol=0, atol=1e-12)
    assert not np.allclose(css_cov(scores, -surprise, budgets, 20, np.random.default_rng(3)),
                           scores.mean())
    # per-stratum sizes follow CSS's allocation: 30 -> 6/12/12, each round of 5 -> 1/2/2
    assert css_sizes(100, (0.2, 0.4, 0.4)).tolist() == [6 + 14, 12 + 28, 12 + 28]


def test_css_cov_rows_summary_and_table12():
    rng = np.random.default_rng(4)
    n = 300
    scores = (rng.random(n) < 0.8).astype(float)
    surprise = rng.normal(size=n) - 2 * scores  # wrong predictions more surprising
    sub = Subject(name="m@id", task="cls", input_type="original", mutant=False, model="m",
                  testset="id", scores=scores)
    params = StudyParams(budgets=(50, 60), reps=7, seed=0)
    rows = pd.DataFrame(css_cov_rows(sub, surprise, params))
    assert len(rows) == 14 and set(rows.experiment) == {"css_cov"} and set(rows.approach) == {"CSS-COV"}
    again = pd.DataFrame(css_cov_rows(sub, surprise, params))
    np.testing.assert_array_equal(rows.estimate, again.estimate)  # seeded per subject

    model = fit_lsa(rng.normal(size=(40, 2)), np.zeros(40, int), 1)
    d = strata_summary("m@id", scores, surprise, model)
    assert (d["stratum0_n"], d["stratum1_n"], d["stratum2_n"]) == (240, 30, 30)
    assert d["stratum0_accuracy"] > d["stratum2_accuracy"]

    # Table 12 from errors: Im = mean over budgets of (MSE_A - MSE_PACE) / MSE_A (spec 4.2)
    err = pd.DataFrame([
        {"experiment": e, "subject": s, "approach": a, "budget": b, "mse": v}
        for e, s, a, vals in [
            ("css_cov", "m@id", "CSS-COV", (4.0, 2.0)), ("main", "m@id", "PACE", (1.0, 1.0)),
            ("main", "m@id", "CSS", (2.0, 2.0)), ("main", "m@id", "SRS", (9.0, 9.0)),
            ("css_cov", "k@id", "CSS-COV", (1.0, 1.0)), ("main", "k@id", "PACE", (1.0, 3.0)),
            ("main", "other@id", "PACE", (5.0, 5.0)),
        ]
        for b, v in zip((50, 60), vals, strict=True)
    ])
    t = table_css_cov(err, ["m@id", "k@id"]).set_index(["subject", "approach"])
    assert "SRS" not in t.index.get_level_values(1)
    assert t.loc[("m@id", "CSS-COV"), "Im"] == pytest.approx(100 * (0.75 + 0.5) / 2)
    assert t.loc[("m@id", "CSS"), "Im"] == pytest.approx(50.0)
    assert np.isnan(t.loc[("m@id", "PACE"), "Im"])
    assert t.loc[("Avg", "CSS-COV"), "n=50"] == pytest.approx(2.5)
    assert t.loc[("Avg", "PACE"), "n=60"] == pytest.approx(2.0)
    assert t.loc[("Avg", "CSS"), "subjects"] == 1
