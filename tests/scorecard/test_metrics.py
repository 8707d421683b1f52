"""Scorecard metrics (docs/methods.md, reading R2, checks 1-3) on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.scorecard import metrics as mt
from labelfree.stats import kendall_tau_b, spearman


def test_perfect_and_reversed_scores():
    acc = np.array([0.5, 0.7, 0.9, 0.6])
    assert mt.mae(acc, acc) == 0.0  # check 1
    s = acc * 3 + 1  # strictly increasing in A
    assert spearman(s, acc) == pytest.approx(1) and kendall_tau_b(s, acc) == pytest.approx(1)
    assert mt.top1_regret(s, acc) == 0.0
    assert spearman(-s, acc) == pytest.approx(-1) and kendall_tau_b(-s, acc) == pytest.approx(-1)
    assert mt.top1_regret(-s, acc) == pytest.approx(0.9 - 0.5)


def test_hand_values():
    est, acc = np.array([0.6, 0.5, 0.9]), np.array([0.5, 0.7, 0.8])
    # |0.1| + |-0.2| + |0.1| = 0.4 / 3; signed: 0.0 / 3; max 0.2
    assert mt.mae(est, acc) == pytest.approx(0.4 / 3)
    assert mt.bias(est, acc) == pytest.approx(0.0, abs=1e-12)
    assert mt.max_abs_error(est, acc) == pytest.approx(0.2)
    # ranks of est: [2, 1, 3], of acc: [1, 2, 3]: d^2 = 1 + 1 + 0 -> rho = 1 - 6*2/(3*8) = 0.5
    assert spearman(est, acc) == pytest.approx(0.5)
    # pairs: (0,1) discordant, (0,2) concordant, (1,2) concordant -> tau = (2 - 1)/3
    assert kendall_tau_b(est, acc) == pytest.approx(1 / 3)


def test_ties_and_undefined():
    acc = np.array([0.9, 0.5, 0.7])
    assert mt.top1_regret(np.array([1.0, 1.0, 0.0]), acc) == pytest.approx((0.0 + 0.4) / 2)  # check 2
    assert np.isnan(spearman(np.ones(3), acc)) and np.isnan(kendall_tau_b(np.ones(3), acc))
    assert np.isnan(mt.mae(np.array([np.nan]), np.array([0.5])))
    assert mt.mae(np.array([np.nan, 0.6]), np.array([0.5, 0.5])) == pytest.approx(0.1)


def test_seed_averaging():
    assert mt.mean_se(np.full(7, 0.3)) == (pytest.approx(0.3), 0.0)  # check 3
    m, se = mt.mean_se(np.array([0.0, 1.0]))
    assert m == 0.5 and se == pytest.approx(0.5)


def test_rank_correlation_rule():
    """labelfree.stats' one rule for Spearman and Kendall: NaN with fewer than two pairs, any
    non-finite value (NaN or inf, in either input) or a constant input; else scipy's value."""
    acc = np.array([0.9, 0.5, 0.7])
    for f in (spearman, kendall_tau_b):
        assert np.isnan(f(np.array([0.3]), np.array([0.9])))  # one pair
        assert f(np.array([0.1, 0.2]), np.array([0.5, 0.9])) == pytest.approx(1)  # two pairs
        assert np.isnan(f(np.array([0.2, np.nan, 0.1]), acc))
        assert np.isnan(f(np.array([0.2, np.inf, 0.1]), acc))
        assert np.isnan(f(np.array([0.2, 0.3, 0.1]), np.array([0.9, -np.inf, 0.7])))
        assert np.isnan(f(np.array([0.2, 0.3, 0.1]), np.full(3, 0.5)))
    with pytest.raises(ValueError):
        spearman(np.ones(3), np.ones(2))
