"""labelfree.stats' rank correlations equal scipy's statistics bit for bit (they reimplement
scipy's arithmetic without its p-values) and follow the module's NaN rule."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from labelfree import stats


def _cases():
    rng = np.random.default_rng(0)
    for n in (2, 3, 5, 20, 33, 34, 200):
        yield rng.random(n), rng.random(n)  # no ties
        yield rng.integers(0, 4, n).astype(float), rng.random(n)  # ties in a
        yield rng.integers(0, 3, n).astype(float), rng.integers(0, 3, n).astype(float)
        x = rng.random(n)
        yield x, -x  # exact reversal
        yield x, x * 3 + 1  # exact agreement


#: Constant draws are left out: the NaN rule applies to them (tested below).
CASES = [(a, b) for a, b in _cases() if np.ptp(a) > 0 and np.ptp(b) > 0]


@pytest.mark.parametrize("case", CASES)
def test_rank_correlations_equal_scipy_bit_for_bit(case):
    a, b = case
    assert stats.spearman(a, b) == st.spearmanr(a, b).statistic
    assert stats.kendall_tau_b(a, b) == st.kendalltau(a, b, variant="b").statistic


def test_average_ranks_equal_rankdata():
    a = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 1.0, 7.0])
    np.testing.assert_array_equal(stats.average_ranks(a), st.rankdata(a))


def test_kendall_above_the_pair_table_limit_equals_scipy():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 50, stats.PAIRWISE_MAX + 10).astype(float)
    b = a + rng.random(a.size)
    assert stats.kendall_tau_b(a, b) == st.kendalltau(a, b, variant="b").statistic


@pytest.mark.parametrize(
    "a, b",
    [([1.0], [2.0]), ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]), ([1.0, np.nan, 3.0], [1.0, 2.0, 3.0]),
     ([1.0, np.inf, 3.0], [1.0, 2.0, 3.0])],
)
def test_nan_rule(a, b):
    assert np.isnan(stats.spearman(a, b))
    assert np.isnan(stats.kendall_tau_b(a, b))


def test_two_values_give_the_order_of_the_pair():
    assert stats.spearman([1.0, 2.0], [5.0, 3.0]) == pytest.approx(-1.0, abs=1e-15)
    assert stats.kendall_tau_b([1.0, 2.0], [3.0, 5.0]) == 1.0
