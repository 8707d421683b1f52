"""PACE spec section 8, checks C1-C4 (allocation, MMD greedy, ART)."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.pace.allocate import allocate, hamilton
from labelfree.pace.art import art_order
from labelfree.pace.mmd import (
    kernel_colsums,
    l2_rows,
    mmd_criticisms,
    mmd_greedy,
    mmd_objective,
    rbf_rows,
)


# ---- C1: reference rounding ------------------------------------------------------------------
def test_c1_reference_allocation_examples():
    a = allocate(100, np.array([5000, 3000, 1000]), 1000, 0.8, "reference")
    assert a.n_minority == 20 and a.quotas.tolist() == [44, 27, 9] and a.size == 100
    b = allocate(51, np.array([4500, 4500]), 1000, 0.8, "reference")
    assert b.n_minority == 11 and b.quotas.tolist() == [20, 20] and b.size == 51


def test_c1_reference_min_one_and_bankers_rounding():
    # a group of 85 among N_G = 9000 with alpha*n = 40 -> share 0.38 -> 1
    a = allocate(50, np.array([85, 8915]), 500, 0.8, "reference")
    assert a.quotas[0] == 1
    # share 20.5 -> 20 and 21.5 -> 22 (round half to even): alpha*n = 42, sizes 205/215 of 420
    b = allocate(105, np.array([205, 215]), 100, 0.4, "reference")
    assert b.quotas.tolist() == [20, 22]


def test_c1_reference_two_art_picks_minimum():
    a = allocate(5, np.array([1000]), 100, 0.8, "reference")  # ceil(1.0) = 1 -> at least 2
    assert a.n_minority == 2


# ---- C2: exact rounding ----------------------------------------------------------------------
def test_c2_exact_examples():
    a = allocate(51, np.array([4500, 4500]), 1000, 0.8, "exact")
    assert a.n_minority == 11 and a.quotas.tolist() == [20, 20] and a.size == 51
    assert hamilton(41, np.array([4500, 4500])).tolist() == [21, 20]
    # tie on fractional part -> larger group first
    assert hamilton(1, np.array([100, 300, 300])).tolist() == [0, 1, 0]


@pytest.mark.parametrize("seed", range(20))
def test_c2_exact_size_and_quota_bounds(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 3000, size=rng.integers(1, 12))
    n_noise = int(rng.integers(0, 800))
    for n in (7, 50, 133, 180):
        a = allocate(n, sizes, n_noise, 0.8, "exact")
        assert a.size == min(n, sizes.sum() + n_noise)
        n_g = a.quotas.sum()
        quota = sizes * n_g / sizes.sum()
        assert np.all(np.abs(a.quotas - quota) < 1 + 1e-9)
        assert np.all(a.quotas <= sizes) and a.n_minority <= n_noise


# ---- C3: exact greedy MMD ----------------------------------------------------------------------
def test_c3_greedy_matches_bruteforce_argmax():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 2))
    order = mmd_greedy(x, 15, gamma=0.026)
    chosen: list[int] = []
    for step in range(15):
        cands = [c for c in range(40) if c not in chosen]
        vals = np.array([mmd_objective(x, np.array(chosen + [c]), 0.026) for c in cands])
        best = cands[int(np.argmax(vals))]
        assert order[step] == best, f"step {step}"
        chosen.append(best)
    xn = l2_rows(x)
    assert order[0] == int(np.argmax(kernel_colsums(xn, 0.026)))
    assert len(set(order.tolist())) == len(order)


def test_c3_prefix_length_is_min_s_nmax():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 3))
    assert len(mmd_greedy(x, 180)) == 30
    assert len(mmd_greedy(x, 12)) == 12
    assert mmd_greedy(x, 12).tolist() == mmd_greedy(x, 30)[:12].tolist()


def test_kernel_colsums_blocked_equal_dense(monkeypatch):
    import labelfree.pace.mmd as mmd

    rng = np.random.default_rng(2)
    x = rng.normal(size=(257, 4))
    dense = rbf_rows(x, np.arange(257), 0.5).sum(axis=0)
    monkeypatch.setattr(mmd, "BLOCK_ELEMS", 1000)  # forces 3-row blocks
    np.testing.assert_allclose(mmd.kernel_colsums(x, 0.5), dense, rtol=1e-12)


def test_criticisms_are_not_prototypes_and_distinct():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(60, 2))
    protos = mmd_greedy(x, 5)
    crit = mmd_criticisms(x, protos, 4)
    assert len(crit) == 4 and len(set(crit)) == 4 and not set(crit) & set(protos)


# ---- C4: ART -------------------------------------------------------------------------------------
def test_c4_maximin_on_a_line():
    x = np.arange(11, dtype=float)[:, None]
    assert art_order(x, 4, first=0).tolist() == [0, 10, 5, 2]


def test_c4_first_pick_is_max_glosh():
    x = np.arange(11, dtype=float)[:, None]
    scores = np.zeros(11)
    scores[[3, 7]] = 0.9  # tie -> smallest index
    assert art_order(x, 1, scores=scores).tolist() == [3]


def test_c4_reference_mode_descends():
    x = np.arange(11, dtype=float)[:, None]
    assert art_order(x, 6, first=0, mode="reference").tolist() == [0, 10, 9, 8, 7, 6]


def test_art_maximin_bruteforce_property():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(50, 3))
    order = art_order(x, 20, first=7)
    for t in range(1, 20):
        prev = order[:t]
        d = np.sqrt(((x[:, None, :] - x[None, prev, :]) ** 2).sum(-1)).min(axis=1)
        d[prev] = -1
        assert order[t] == int(np.argmax(d))
    assert len(set(order.tolist())) == 20


def test_min_one_per_group_exact_mode_known_answer():
    """Spec 2.6 / 2.11 switch ``min_one_per_group`` in the exact mode, by hand. n = 20, alpha =
    0.8: n_M = ceil(0.2 * 20) = 4, n_G = 16, group sizes (1000, 100, 10, 5), sum 1115.
    Off: Hamilton(16): 16 s / 1115 = 14.350, 1.435, 0.1435, 0.0717 -> floors (14, 1, 0, 0),
    one unit left to the largest remainder 0.435 -> (14, 2, 0, 0): two groups get nothing.
    On: one per group, then Hamilton(12): 10.762, 1.076, 0.108, 0.054 -> (10, 1, 0, 0) + the
    unit to remainder 0.762 -> (11, 1, 0, 0); plus one each -> (12, 2, 1, 1).
    With n_G < groups the switch cannot hold and is ignored: n = 4 -> n_M = 1, n_G = 3,
    Hamilton(3): 2.691, 0.269, ... -> (2, 0, 0, 0) + 1 to 0.691 -> (3, 0, 0, 0)."""
    sizes = np.array([1000, 100, 10, 5])
    off = allocate(20, sizes, 50, 0.8, "exact", min_one_per_group=False)
    on = allocate(20, sizes, 50, 0.8, "exact", min_one_per_group=True)
    assert off.n_minority == on.n_minority == 4
    assert off.quotas.tolist() == [14, 2, 0, 0]
    assert on.quotas.tolist() == [12, 2, 1, 1]
    assert on.size == off.size == 20
    five = allocate(5, sizes, 50, 0.8, "exact", min_one_per_group=True)  # n_G = 4 = groups
    assert (five.n_minority, five.quotas.tolist()) == (1, [1, 1, 1, 1])
    four = allocate(4, sizes, 50, 0.8, "exact", min_one_per_group=True)
    assert (four.n_minority, four.quotas.tolist()) == (1, [3, 0, 0, 0])
