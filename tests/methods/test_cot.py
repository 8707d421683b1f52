"""COT / COTT (scorecard spec section 3): exact OT checks against brute force and hand cases."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from labelfree.methods import cot as C
from labelfree.methods import softmax


def test_label_counts_follow_sample_label_dist():
    # spec 3 step 2: int(d_k n) copies, remainder from random.Random(10).choices
    d = np.array([0.5, 0.3, 0.2])
    counts = C.label_counts(d, 7, random.Random(10))
    extra = random.Random(10).choices(range(3), weights=d.tolist(), k=1)
    assert counts.tolist() == (np.array([3, 2, 1]) + np.bincount(extra, minlength=3)).tolist()


def test_transport_matches_brute_force():
    r = np.random.default_rng(0)
    P = softmax(r.normal(size=(6, 3)) * 2)
    counts = np.array([3, 2, 1])
    labels = np.repeat(np.arange(3), counts)
    best = min(sum(1 - P[i, labels[j]] for i, j in enumerate(p))
               for p in itertools.permutations(range(6)))
    k = C.transport_assign(P, counts)
    assert np.bincount(k, minlength=3).tolist() == counts.tolist()
    assert (1 - P[np.arange(6), k]).sum() == pytest.approx(best)


def test_cot_uniform_and_perfect_cases():
    K = 4
    y_src = np.arange(40) % K
    assert C.cot(np.full((20, K), 1 / K), y_src).error == pytest.approx(1 - 1 / K)  # check 1
    onehot = np.eye(K)[np.arange(20) % K]  # histogram equals the multiset (5 each)
    assert C.cot(onehot, y_src).error == pytest.approx(0.0, abs=1e-12)  # check 3


def test_cot_lower_bound_and_permutation():
    r = np.random.default_rng(1)
    P = softmax(r.normal(size=(50, 5)) * 3)
    y = r.integers(0, 5, 80)
    e = C.cot(P, y).error
    assert e >= 1 - P.max(1).mean() - 1e-12  # check 2
    assert C.cot(P[r.permutation(50)], y).error == pytest.approx(e)  # check 4
    assert 0 <= e <= 1


def test_cott_on_its_own_source():
    # spec 3 check 6: target = source with the true label multiset -> (n_inc - 1) / n
    r = np.random.default_rng(2)
    P = softmax(r.normal(size=(40, 4)) * 2)
    y = r.integers(0, 4, 40)
    n_inc = int((P.argmax(1) != y).sum())
    res = C.cott(P, P, y)
    assert res.error == pytest.approx((n_inc - 1) / 40)
    assert C.cott(P, P, y, threshold_rule="exact").error == pytest.approx(n_inc / 40)


def test_cot_multibatch_is_seeded():
    r = np.random.default_rng(3)
    P = softmax(r.normal(size=(90, 3)))
    y = r.integers(0, 3, 50)
    a = C.cot(P, y, batch_size=40)
    assert a.costs.size == 3 * 40  # ceil(90 / 40) batches of 40
    assert a.error == C.cot(P, y, batch_size=40).error
