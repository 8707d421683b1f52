"""Kernel checks of the alpha-trimming spec, section 7 (items 1-9)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from labelfree.alphatrim.bootstrap import DEFAULT_GRID
from labelfree.alphatrim.kernel import (
    ReferenceCDF,
    acceptance_threshold,
    ecdf_distance,
    trimmed_ks,
    trimming_function,
)

GRID = np.array(DEFAULT_GRID)


def _union_grid_terms(r: np.ndarray, c: np.ndarray):
    """Spec 2.5 steps 1-3 literally: F0 on the sorted union grid, t_i and t_prev_i."""
    f0 = ReferenceCDF.from_sample(r)
    z = np.sort(np.concatenate([r, c]))
    cs = np.sort(c)
    t = np.searchsorted(cs, z, side="right") / c.size
    t_prev = np.concatenate([[0.0], t[:-1]])
    return f0(z), t, t_prev


def _spec_closed_form(r: np.ndarray, c: np.ndarray, alpha: float) -> float:
    """Spec 2.5 step 4 on the union grid, written as in the spec (independent of the library)."""
    fz, t, t_prev = _union_grid_terms(r, c)
    n = fz.size
    k, lo = 1 / (1 - alpha), -alpha / (1 - alpha)
    xu, xl = fz - k * t_prev, fz - k * t
    u = np.empty(n + 1)
    u[n] = lo
    for j in range(n - 1, -1, -1):
        u[j] = max(xu[j], u[j + 1]) if j < n - 1 else xu[j]
    low = np.empty(n + 1)
    low[0] = 0.0
    for j in range(1, n + 1):
        low[j] = xl[j - 1] if j == 1 else min(low[j - 1], xl[j - 1])
    g = np.clip((u + low) / 2, lo, 0)
    return max(max(xu[i] - g[i] for i in range(n)), max(g[i + 1] - xl[i] for i in range(n)))


def _lp(r: np.ndarray, c: np.ndarray, alpha: float) -> float:
    """The linear programme of spec 2.5 ("Exactness") solved by HiGHS."""
    fz, t, t_prev = _union_grid_terms(r, c)
    n = fz.size
    k, lo = 1 / (1 - alpha), -alpha / (1 - alpha)
    nv = n + 2  # g_0..g_n, d
    rows, rhs = [], []
    for i in range(1, n + 1):
        a = np.zeros(nv)  # xu_i - g_{i-1} <= d
        a[i - 1], a[-1] = -1, -1
        rows.append(a), rhs.append(-(fz[i - 1] - k * t_prev[i - 1]))
        a = np.zeros(nv)  # g_i - xl_i <= d
        a[i], a[-1] = 1, -1
        rows.append(a), rhs.append(fz[i - 1] - k * t[i - 1])
        a = np.zeros(nv)  # g non-increasing
        a[i], a[i - 1] = 1, -1
        rows.append(a), rhs.append(0.0)
        a = np.zeros(nv)  # g_i - g_{i-1} >= -k (t_i - t_{i-1})
        a[i], a[i - 1] = -1, 1
        rows.append(a), rhs.append(k * (t[i - 1] - t_prev[i - 1]))
    eq = np.zeros((2, nv))
    eq[0, 0] = 1
    eq[1, n] = 1
    cost = np.zeros(nv)
    cost[-1] = 1
    res = optimize.linprog(
        cost, A_ub=np.array(rows), b_ub=np.array(rhs), A_eq=eq, b_eq=[0.0, lo],
        bounds=[(None, None)] * nv, method="highs",
    )
    assert res.status == 0, res.message
    return float(res.fun)


def _random_pair(rng: np.random.Generator, ties: bool):
    nr, nc = rng.integers(5, 41, size=2)
    r = rng.normal(size=nr)
    c = rng.normal(loc=rng.normal(0, 0.7), scale=rng.uniform(0.5, 2), size=nc)
    if ties:
        r, c = np.round(r * 2) / 2, np.round(c * 2) / 2
    return r, c


def test_alpha0_equals_two_sample_ks():
    """Spec 7.1: |d_0 - ks_2samp| <= 1/N_r for distinct values; with ties the interpolation
    error is the largest jump of the reference eCDF (max tie count / N_r)."""
    rng = np.random.default_rng(1)
    for trial in range(30):
        n_r, n_c = rng.integers(20, 3000, size=2)
        r = rng.normal(size=n_r)
        c = rng.normal(0.1 * trial / 30, 1.0, size=n_c)
        if trial % 3 == 0:
            r, c = np.round(r, 1), np.round(c, 1)
        d0 = trimmed_ks(c, r, 0.0)[0]
        ks = stats.ks_2samp(r, c).statistic
        max_jump = np.unique(r, return_counts=True)[1].max() / n_r
        if trial % 3:
            assert max_jump == 1 / n_r
        assert abs(d0 - ks) <= max_jump + 1e-12, (trial, d0, ks)


def test_sample_against_itself():
    """Spec 7.2: trimmed_ks(x, x, 0) == 1/N for distinct values (the interpolation error)."""
    x = np.random.default_rng(2).normal(size=777)
    assert trimmed_ks(x, x, 0.0)[0] == pytest.approx(1 / 777, abs=1e-15)
    assert trimmed_ks(x, x, 0.0)[0] <= acceptance_threshold(777)


def test_monotone_in_alpha_and_bounded():
    """Spec 7.3 and 7.8: d non-increasing along the grid, 0 <= d <= 1, with and without ties."""
    rng = np.random.default_rng(3)
    for ties in (False, True):
        r = rng.normal(size=500)
        c = rng.normal(0.3, 1.4, size=(20, 400))
        if ties:
            r, c = np.round(r), np.round(c)
        d = trimmed_ks(c, r, GRID)
        assert d.shape == (20, GRID.size)
        assert (np.diff(d, axis=1) <= 1e-12).all()
        assert ((d >= 0) & (d <= 1)).all()


def test_closed_form_matches_lp_and_spec_union_grid():
    """Spec 7.4: closed form == LP optimum (HiGHS) to 1e-9 on >= 40 random small problems."""
    rng = np.random.default_rng(4)
    alphas = [0.0, 0.05, 0.1, 0.25, 0.45]
    n_checked = 0
    for trial in range(48):
        r, c = _random_pair(rng, ties=trial % 2 == 1)
        d = trimmed_ks(c, r, alphas)
        for j, a in enumerate(alphas):
            lp = _lp(r, c, a)
            spec = _spec_closed_form(r, c, a)
            assert d[j] == pytest.approx(lp, abs=1e-9), (trial, a, d[j], lp)
            assert d[j] == pytest.approx(spec, abs=1e-12), (trial, a, d[j], spec)
            n_checked += 1
    assert n_checked >= 40 * len(alphas)


def _contaminated(a: float, n: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    ref = stats.norm.ppf((np.arange(n) + 0.5) / n)
    na = round(a * n)
    good = stats.norm.ppf((np.arange(n - na) + 0.5) / (n - na))
    bad = 8 + 0.5 * stats.norm.ppf((np.arange(na) + 0.5) / na)
    return ref, np.concatenate([good, bad])


@pytest.mark.parametrize("a", [0.05, 0.1, 0.2, 0.3])
def test_known_contamination_levels(a):
    """Spec 7.5: d_alpha = max(0, (a - alpha)/(1 - alpha)) within 1e-3; accepted level."""
    ref, cand = _contaminated(a)
    d = trimmed_ks(cand, ref, GRID)
    np.testing.assert_allclose(d, np.maximum(0, (a - GRID) / (1 - GRID)), atol=1e-3)
    gamma = acceptance_threshold(4000)
    accepted = GRID[np.argmax(d <= gamma)]
    expected = {0.05: 0.025, 0.1: 0.075, 0.2: 0.2, 0.3: 0.3}[a]
    assert accepted == expected
    assert accepted == GRID[np.argmax((a - gamma) / (1 - gamma) <= GRID)]


def test_known_contamination_a02_printed_values():
    """Spec 7.5 printed row for a = 0.2: 0.200, 0.192, 0.180, 0.158, 0.135, 0.111, 0.059, 0,
    within the spec's 1e-3 (measured max |diff| 3.6e-4 against the printed 3 decimals)."""
    ref, cand = _contaminated(0.2)
    d = trimmed_ks(cand, ref, GRID)
    np.testing.assert_allclose(
        d[:8], [0.200, 0.192, 0.180, 0.158, 0.135, 0.111, 0.059, 0.0], atol=1e-3
    )


@pytest.mark.parametrize("a", [0.2, 0.3])
def test_random_contaminated_samples(a):
    """Spec 7.5: with random samples of 4000 the levels for a in {0.2, 0.3} are stable."""
    rng = np.random.default_rng(5)
    ref = rng.normal(size=4000)
    na = round(a * 4000)
    cand = np.concatenate([rng.normal(size=4000 - na), rng.normal(8, 0.5, size=na)])
    d = trimmed_ks(cand, ref, GRID)
    assert GRID[np.argmax(d <= acceptance_threshold(4000))] == a


def test_trimming_weights():
    """Spec 7.6: w_i in [0, 1/(1-alpha)], mean 1; h(0) = 0, h(1) = 1; low weights on the outliers."""
    ref, cand = _contaminated(0.2, n=1000)
    for alpha in (0.0, 0.1, 0.25, 0.45):
        _, h, w = trimming_function(cand, ref, alpha)
        assert h[0] == pytest.approx(0.0, abs=1e-12)
        assert h[-1] == pytest.approx(1.0, abs=1e-12)
        assert (w >= -1e-9).all() and (w <= 1 / (1 - alpha) + 1e-9).all()
        assert w.mean() == pytest.approx(1.0, abs=1e-12)
    _, _, w = trimming_function(cand, ref, 0.25)
    assert w[-200:].mean() < 0.2 < 1.0 < w[:800].mean()  # the far block is trimmed


def test_affine_invariance():
    """Spec 7.7: z -> a z + b (a > 0) on both samples leaves d_alpha unchanged."""
    rng = np.random.default_rng(6)
    r, c = rng.normal(size=300), rng.standard_t(3, size=(4, 250))
    np.testing.assert_allclose(
        trimmed_ks(c, r, GRID), trimmed_ks(3.5 * c - 2, 3.5 * r - 2, GRID), atol=1e-12
    )


def test_far_shift_gives_maximal_distance():
    """Spec 7.8: a candidate outside the reference support has d = 1 for every alpha."""
    rng = np.random.default_rng(7)
    d = trimmed_ks(rng.normal(50, 1, 200), rng.normal(size=200), GRID)
    np.testing.assert_allclose(d, 1.0)


def test_thresholds():
    """Spec 7.9: gamma(4000, 0.01) = 0.036645; gamma(449) uses C = e and equals 0.11396."""
    assert acceptance_threshold(4000, 0.01) == pytest.approx(0.036645, abs=5e-7)
    assert acceptance_threshold(449, 0.01) == pytest.approx(0.11396, abs=5e-6)
    assert acceptance_threshold(449) == pytest.approx(
        math.sqrt(math.log(math.e / 0.01) / 449) + 1 / 449
    )


def test_ecdf_distance_matches_brute_force_with_ties():
    """Spec 2.7: sup-norm between two step eCDFs, checked on the union of jump points."""
    rng = np.random.default_rng(8)
    ref = np.round(rng.normal(size=600), 1)
    samples = np.round(rng.normal(0.2, 0.8, size=(5, 150)), 1)
    d = ecdf_distance(ref, samples)
    for row, got in zip(samples, d, strict=True):
        z = np.union1d(ref, row)
        fr = np.searchsorted(np.sort(ref), z, side="right") / ref.size
        fs = np.searchsorted(np.sort(row), z, side="right") / row.size
        assert got == pytest.approx(np.abs(fr - fs).max(), abs=1e-12)
        assert got == pytest.approx(stats.ks_2samp(ref, row).statistic, abs=1e-12)
