"""Algorithm 1 and companion metrics (alpha-trimming spec section 7, items 2, 10-15)."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.alphatrim.bootstrap import (
    DEFAULT_GRID,
    _replicate,
    alpha_hat,
    first_accepted_level,
)
from labelfree.alphatrim.kernel import ecdf_distance, trimmed_ks
from labelfree.alphatrim.metrics import (
    accuracy,
    average_churn,
    churn_matrix,
    churn_vs,
    ece,
    ensemble_gaps,
    logit_gap,
    sample_ensembles,
)

GRID = np.array(DEFAULT_GRID)


def _zoo(rng: np.random.Generator, k: int, n: int, spread: float = 0.3) -> np.ndarray:
    """Synthetic zoo: shared per-point signal plus per-model deviations (logit-gap-like)."""
    base = rng.normal(0, 3, size=n)
    scale = 1 + spread * rng.normal(size=(k, 1)) * 0.1
    return base * scale + rng.normal(0, 0.5, size=(k, n))


def test_self_test_through_algorithm_1():
    """Spec 7.2: reference = the candidate alone, N_test = 8000, B = 100 -> alpha-hat <= 0.005,
    plain-KS rejection rate <= 0.1."""
    x = np.random.default_rng(10).normal(size=8000)
    res = alpha_hat(x[None, :], x, n_boot=100, seed=3)
    assert res.alpha_hat[0] <= 0.005
    assert res.ks_reject_rate[0] <= 0.1
    assert res.gamma == pytest.approx(0.036645, abs=5e-7)


def test_bisection_equals_full_grid_scan():
    """The bisection of alpha_hat picks the same level as scanning all grid values (spec 2.6)."""
    rng = np.random.default_rng(11)
    ref = _zoo(rng, 12, 600)
    cand = np.concatenate([_zoo(rng, 6, 600), 0.4 * _zoo(rng, 3, 600), _zoo(rng, 3, 600) + 2])
    cand = np.round(cand, 1)  # ties
    res = alpha_hat(ref, cand, n_boot=7, seed=5)
    n = 300
    rejected = np.zeros(len(cand))
    for b in range(7):
        rep = _replicate(ref, n, 5, b, "pooled_resample")
        d = trimmed_ks(cand[:, rep.i_cand], rep.ref, GRID)
        np.testing.assert_array_equal(res.alpha_boot[:, b], first_accepted_level(d, GRID, res.gamma))
        rejected += d[:, 0] > res.gamma  # plain KS (alpha = 0) rejects this replicate
    # spec 2.6: the classical-KS rejection rate is the share of replicates with d_0 > gamma
    np.testing.assert_allclose(res.ks_reject_rate, rejected / 7, rtol=0, atol=1e-12)
    assert res.ks_reject_rate.max() > 0 and res.ks_reject_rate.min() < 1  # both outcomes occur


def test_reproducible_and_common_random_numbers():
    """Spec 7.10: same seed -> identical arrays; candidates share indices and reference sample."""
    rng = np.random.default_rng(12)
    ref, cand = _zoo(rng, 10, 400), _zoo(rng, 4, 400)
    a = alpha_hat(ref, cand, n_boot=20, seed=9)
    b = alpha_hat(ref, cand, n_boot=20, seed=9, n_jobs=2, block_elements=1000)
    np.testing.assert_array_equal(a.alpha_boot, b.alpha_boot)
    np.testing.assert_array_equal(a.ks_reject_rate, b.ks_reject_rate)
    single = alpha_hat(ref, cand[2], n_boot=20, seed=9)
    np.testing.assert_array_equal(single.alpha_boot[0], a.alpha_boot[2])
    other = alpha_hat(ref, cand, n_boot=20, seed=10)
    assert not np.array_equal(other.alpha_boot, a.alpha_boot)


def test_held_out_run_near_zero_undertrained_run_high():
    """Spec 7.11: a run of the same recipe gets alpha-hat ~ 0; an under-trained one is far above."""
    rng = np.random.default_rng(13)
    base = rng.normal(0, 3, size=2000)
    models = base + rng.normal(0, 0.6, size=(31, 2000))
    undertrained = 0.3 * base + rng.normal(0, 0.3, size=2000)  # gaps squeezed toward 0
    res = alpha_hat(models[:30], np.stack([models[30], undertrained]), n_boot=40, seed=1)
    assert res.alpha_hat[0] < 0.02
    assert res.alpha_hat[1] > 0.2


def test_far_candidate_censored():
    """Spec 7.8: a candidate shifted far outside the reference gets 0.5 in every replicate."""
    rng = np.random.default_rng(14)
    ref = rng.normal(size=(5, 500))
    res = alpha_hat(ref, rng.normal(40, 1, size=500), n_boot=10, seed=0)
    np.testing.assert_array_equal(res.alpha_boot, 0.5)
    assert res.ks_reject_rate[0] == 1.0


def test_reference_modes_and_validation():
    """Spec 2.6 option exact_pool: replicate b (generator default_rng([seed, b])) draws N = N_test/2
    candidate indices then N reference indices; the reference sample is every one of the M models
    at those indices (M N values), rebuilt here without the library's replicate helper."""
    rng = np.random.default_rng(15)
    ref = _zoo(rng, 8, 400)
    cand = np.concatenate([_zoo(rng, 1, 400), 0.6 * _zoo(rng, 1, 400), _zoo(rng, 1, 400) + 1.5])
    exact = alpha_hat(ref, cand, n_boot=10, seed=2, reference_mode="exact_pool")
    gamma = exact.gamma
    assert len(np.unique(exact.alpha_boot)) >= 3  # the case tells levels apart
    for b in range(10):
        idx = np.random.default_rng([2, b]).integers(400, size=400)
        d = trimmed_ks(cand[:, idx[:200]], ref[:, idx[200:]].ravel(), GRID)
        level = np.array([GRID[np.argmax(r <= gamma)] if (r <= gamma).any() else 0.5 for r in d])
        np.testing.assert_array_equal(exact.alpha_boot[:, b], level)
    np.testing.assert_allclose(exact.alpha_hat, exact.alpha_boot.mean(axis=1), rtol=1e-12)
    pooled = alpha_hat(ref, cand, n_boot=10, seed=2)
    assert not np.array_equal(pooled.alpha_boot, exact.alpha_boot)  # the option reaches the draw
    with pytest.raises(ValueError, match="reference_mode"):
        alpha_hat(ref, cand, reference_mode="nope")
    with pytest.raises(ValueError, match="N_test"):
        alpha_hat(ref, cand[:, :300])
    with pytest.raises(ValueError, match="increasing"):
        alpha_hat(ref, cand, grid=(0.1, 0.0))


def test_ensemble_of_reference_small_alpha_nonzero_linf():
    """Spec 7.12: the ensemble of all M reference models has small alpha-hat, non-zero L_inf."""
    rng = np.random.default_rng(16)
    ref = _zoo(rng, 40, 2000)
    ens = ensemble_gaps(ref, np.arange(40)[None, :])
    res = alpha_hat(ref, ens, n_boot=30, seed=4)
    assert res.alpha_hat[0] <= 0.05
    assert ecdf_distance(ref, ens[0]) > 0.005


def test_churn_matrix_properties():
    """Spec 7.13: symmetric, integer, zero diagonal; churn w.r.t. itself is 0."""
    rng = np.random.default_rng(17)
    g = rng.normal(size=(7, 300))
    c = churn_matrix(g)
    assert c.dtype == np.int64 and (c == c.T).all() and (np.diag(c) == 0).all()
    brute = np.array([[(np.sign(a + 1e-300) != np.sign(b + 1e-300)).sum() for b in g] for a in g])
    np.testing.assert_array_equal(c, brute)
    np.testing.assert_array_equal(churn_vs(g, g[3])[3], 0)
    np.testing.assert_allclose(average_churn(c), c.sum(1) / 6)


def _ece_loop(gap: np.ndarray, y: np.ndarray, bins: int) -> float:
    p = 1 / (1 + np.exp(-gap))
    pred = (gap >= 0).astype(int)
    conf = np.where(pred == 1, p, 1 - p)
    total = 0.0
    for r in range(bins):
        lo, hi = r / bins, (r + 1) / bins
        m = (conf > lo) & (conf <= hi) if r else (conf >= lo) & (conf <= hi)
        if m.any():
            total += m.sum() / len(gap) * abs((pred[m] == y[m]).mean() - conf[m].mean())
    return total


def test_ece_matches_loop_and_perfect_calibration():
    """Spec 7.14: ECE matches a direct loop; 0 for a calibrated predictor; within [0, 1]."""
    rng = np.random.default_rng(18)
    g = rng.normal(0, 3, size=(4, 1000))
    y = rng.integers(0, 2, size=1000)
    got = ece(g, y, 10)
    for row, e in zip(g, got, strict=True):
        assert e == pytest.approx(_ece_loop(row, y, 10), abs=1e-12)
        assert 0 <= e <= 1
    # calibrated: confidence 0.75 everywhere (gap = ln 3) with exactly 75 % correct
    gap = np.full(400, np.log(3.0))
    yy = np.r_[np.ones(300, int), np.zeros(100, int)]
    assert ece(gap, yy, 10) == pytest.approx(0.0, abs=1e-12)


def test_ensemble_by_gap_average_equals_softmax_of_average_logits():
    """Spec 7.15: averaging gaps == averaging two-logit vectors then softmax."""
    rng = np.random.default_rng(19)
    logits = rng.normal(0, 2, size=(6, 50, 2))
    members = sample_ensembles(6, 4, 3, rng)
    assert all(len(set(m)) == 4 for m in members)
    ens = ensemble_gaps(logit_gap(logits, clip_mode="none"), members)
    avg = logits[members].mean(axis=1)  # (3, 50, 2)
    prob = np.exp(avg[..., 1]) / np.exp(avg).sum(-1)
    np.testing.assert_allclose(1 / (1 + np.exp(-ens)), prob, atol=1e-12)
    np.testing.assert_array_equal(ens >= 0, avg.argmax(-1) == 1)


def test_logit_gap_clip_modes_and_accuracy():
    logits = np.array([[[0.0, 20.0], [3.0, 1.0], [0.0, -16.0], [1.0, 1.0]]])
    np.testing.assert_allclose(logit_gap(logits)[0], [15, -2, -15, 0])
    np.testing.assert_allclose(logit_gap(logits, clip_mode="zero")[0], [0, -2, 0, 0])
    with pytest.raises(ValueError, match="clip_mode"):
        logit_gap(logits, clip_mode="bad")
    # ties -> positive class (spec 2.1)
    assert accuracy(logit_gap(logits), np.array([1, 0, 0, 1]))[0] == 100.0
