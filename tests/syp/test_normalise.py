"""Normalisation identities (docs/syp.md, reading R5)."""

from __future__ import annotations

import numpy as np

from labelfree.syp.normalise import fit_normaliser, minmax_groups, minmax_within
from labelfree.syp.plan import COLUMNS


def _rows(seed=0, sets=5, n=40):
    g = np.random.default_rng(seed)
    x = g.normal(size=(sets * n, 6)) * [1, 2, 30, 0.1, 5, 1]
    groups = np.repeat(np.arange(sets), n)
    x[:, 5] = (groups + 1.0) * 7.0  # FD constant within each set
    return x, groups


def test_pooled_training_columns_span_unit_interval():
    """Check 6: pooled-normalised training columns lie in [0,1] with min 0 and max 1 each."""
    x, g = _rows()
    norm = fit_normaliser(x, COLUMNS, "pooled")
    xn = norm.transform_train(x, g)
    np.testing.assert_allclose(xn.min(axis=0), 0.0)
    np.testing.assert_allclose(xn.max(axis=0), 1.0)


def test_eval_fd_clipped_and_zero_range_gives_zero():
    """Check 7: evaluation FD clipped to [0,1]; zero-range columns give 0, never NaN."""
    x, g = _rows()
    norm = fit_normaliser(x, COLUMNS, "pooled")
    ev = x[:10].copy()
    ev[:, 5] = 1000.0  # far outside the meta-sets' FD range
    ev[:, 2] = 4.0  # zero range within the set
    out = norm.transform_eval(ev)
    assert np.all(out[:, 5] == 1.0)
    assert np.all(out[:, 2] == 0.0)
    assert np.isfinite(out).all()
    ev[:, 5] = -5.0
    assert np.all(norm.transform_eval(ev)[:, 5] == 0.0)
    # the non-FD columns are min-max within the set
    np.testing.assert_allclose(out[:, [0, 1, 3, 4]], minmax_within(ev[:, [0, 1, 3, 4]]))


def test_per_set_scope_and_disabled():
    x, g = _rows()
    per = fit_normaliser(x, COLUMNS, "per_set").transform_train(x, g)
    for k in range(5):
        sel = g == k
        np.testing.assert_allclose(per[sel][:, :5], minmax_within(x[sel][:, :5]))
    # FD keeps the pooled meta-set range (constant within a set)
    np.testing.assert_allclose(np.unique(per[:, 5]), np.linspace(0, 1, 5))
    raw = fit_normaliser(x, COLUMNS, enabled=False)
    np.testing.assert_array_equal(raw.transform_train(x, g), x)
    np.testing.assert_array_equal(raw.transform_eval(x[:10]), x[:10])


def test_minmax_groups_matches_loop():
    x, g = _rows(seed=3)
    out = minmax_groups(x, g)
    for k in range(5):
        np.testing.assert_allclose(out[g == k], minmax_within(x[g == k]))
