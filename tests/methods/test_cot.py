"""COT / COTT (scorecard spec section 3): exact OT checks against brute force, the n x n
formulations (the authors' ``ot.emd`` call and the expanded assignment) and hand cases."""

from __future__ import annotations

import itertools
import random

import numpy as np
import ot
import pytest
from scipy.optimize import linear_sum_assignment

from labelfree.methods import cot as C
from labelfree.methods.arrays import n_workers
from labelfree.methods.registry import call
from labelfree.numerics import softmax


def expanded_assign(P: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Oracle: the n x n assignment of label points (class k repeated counts[k] times) to samples,
    solved by ``linear_sum_assignment`` (the implementation before POT; spec 3 accepts it as a
    replacement of the authors' n x n ``ot.emd``). Returns each sample's class."""
    rows = np.repeat(np.arange(P.shape[1]), counts)
    r, c = linear_sum_assignment(P[:, rows].T, maximize=True)
    out = np.empty(len(P), dtype=np.int64)
    out[c] = rows[r]
    return out


def authors_cot_error(P: np.ndarray, labels: np.ndarray) -> float:
    """COT error exactly as luyuzhe111/COT@392c0ff run_estimation.py computes it for one batch
    (spec 3 steps 3-5): C_ji = ||e_l_j - p_i||_1 / 2, Pi = ot.emd([], [], C) with uniform
    marginals, c_j = n sum_i Pi_ji C_ji, error = mean_j c_j."""
    n, K = P.shape
    Cst = np.abs(np.eye(K)[labels][:, None, :] - P[None, :, :]).sum(axis=2) / 2
    Pi = ot.emd([], [], Cst, numItermax=int(1e8))
    return float((n * (Pi * Cst).sum(axis=1)).mean())


def _cases():
    """(P, counts) pairs: generic softmax rows, and rows with exact cost ties (quantised
    probabilities, repeated rows, one-hots), with absent classes among the counts."""
    r = np.random.default_rng(7)
    out = []
    for t in range(24):
        n, K = int(r.integers(5, 40)), int(r.integers(2, 7))
        P = softmax(r.normal(size=(n, K)) * r.uniform(0.5, 6))
        if t % 3 == 1:
            P = np.round(P * 4) + 1e-300  # quantised: many equal costs
            P /= P.sum(axis=1, keepdims=True)
        elif t % 3 == 2:
            P = np.eye(K)[r.integers(0, K, n)]  # one-hot rows: ties everywhere
        w = r.dirichlet(np.ones(K))
        if t % 4 == 0:
            w[0] = 0.0  # a class absent from the label multiset
            w /= w.sum()
        counts = np.bincount(r.choice(K, size=n, p=w), minlength=K)
        out.append((P, counts))
    return out


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


@pytest.mark.parametrize("case", range(24))
def test_transport_equals_expanded_assignment(case):
    # spec 3 "equivalent fast path": the n x K transport has the n x n optimum; ties may assign
    # differently, the objective may not
    P, counts = _cases()[case]
    k = C.transport_assign(P, counts)
    assert np.bincount(k, minlength=P.shape[1]).tolist() == counts.tolist()
    k0 = expanded_assign(P, counts)
    n = len(P)
    assert (1 - P[np.arange(n), k]).sum() == pytest.approx((1 - P[np.arange(n), k0]).sum(),
                                                           abs=1e-12 * n)


def test_transport_per_sample_costs_without_ties():
    # generic (continuous) rows have a unique optimum: per-sample costs equal the oracle's
    r = np.random.default_rng(11)
    for _ in range(10):
        P = softmax(r.normal(size=(60, 5)) * 3)
        counts = np.bincount(r.integers(0, 5, 60), minlength=5)
        k, k0 = C.transport_assign(P, counts), expanded_assign(P, counts)
        np.testing.assert_array_equal(k, k0)


def test_cot_equals_authors_nxn_emd():
    # spec 3 steps 1-5: the authors' n x n ot.emd with the same multiset gives the same error
    r = np.random.default_rng(4)
    for n, K in [(30, 3), (50, 5), (41, 7)]:
        P = softmax(r.normal(size=(n, K)) * 2)
        y = r.integers(0, K, 3 * n)
        counts = C.label_counts(C.label_distribution(y, K), n, random.Random(10))
        labels = np.repeat(np.arange(K), counts)
        assert C.cot(P, y).error == pytest.approx(authors_cot_error(P, labels), abs=1e-12)


def test_cot_weighted_emd_check():
    # spec 3 check 5: ot.emd2(counts/n, ones(n)/n, (1 - P).T) equals COT
    r = np.random.default_rng(5)
    P = softmax(r.normal(size=(70, 6)) * 2)
    y = r.integers(0, 6, 200)
    counts = C.label_counts(C.label_distribution(y, 6), 70, random.Random(10))
    w = ot.emd2(counts / 70, np.ones(70) / 70, (1 - P).T)
    assert C.cot(P, y).error == pytest.approx(w, abs=1e-12)


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


def test_cot_multibatch_follows_the_authors_batches():
    # spec 3 multi-batch [code]: Python RNG seeded once; per batch random.choices(range(n), k=b)
    # rows (with replacement) and a fresh multiset of size b; errors averaged
    r = np.random.default_rng(6)
    n, K, b = 50, 4, 20
    P = softmax(r.normal(size=(n, K)) * 2)
    y = r.integers(0, K, 100)
    g = random.Random(10)
    errs = []
    for _ in range(3):  # ceil(50 / 20)
        Pb = P[np.asarray(g.choices(range(n), k=b))]
        labels = np.repeat(np.arange(K), C.label_counts(C.label_distribution(y, K), b,
                                                        random.Random(10)))
        errs.append(authors_cot_error(Pb, labels))
    assert C.cot(P, y, batch_size=b).error == pytest.approx(np.mean(errs), abs=1e-12)


def test_registry_cot_threads_match_per_model():
    r = np.random.default_rng(8)
    P = softmax(r.normal(size=(5, 40, 4)) * 2)
    Ps = softmax(r.normal(size=(5, 60, 4)) * 2)
    ys = r.integers(0, 4, 60)
    got = call("estimate", "COT", P, source_labels=ys)
    assert got.tolist() == [C.cot(P[m], ys).accuracy for m in range(5)]
    got = call("estimate", "COTT", P, source_probs=Ps, source_labels=ys)
    assert got.tolist() == [C.cott(P[m], Ps[m], ys).accuracy for m in range(5)]


def test_n_workers_follows_omp_num_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert n_workers() == 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert n_workers() >= 1


def test_cot_multibatch_is_seeded():
    r = np.random.default_rng(3)
    P = softmax(r.normal(size=(90, 3)))
    y = r.integers(0, 3, 50)
    a = C.cot(P, y, batch_size=40)
    assert a.costs.size == 3 * 40  # ceil(90 / 40) batches of 40
    assert a.error == C.cot(P, y, batch_size=40).error


@pytest.mark.parametrize("case", range(24))
def test_certified_solver_equals_emd_on_tie_cases(case):
    # labelfree.methods._transport (negative-cycle cancelling, Bellman-Ford certificate) against
    # POT's ot.emd on the same n x K problem: equal optimal totals (ties may pick other vertices)
    P, counts = _cases()[case]
    k = C.transport_assign(P, counts, solver="certified")
    k0 = C.transport_assign(P, counts, solver="emd")
    assert np.bincount(k, minlength=P.shape[1]).tolist() == counts.tolist()
    n = len(P)
    tot, tot0 = (P[np.arange(n), k]).sum(), (P[np.arange(n), k0]).sum()
    assert abs(tot - tot0) <= 1e-9 * max(abs(tot0), 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_certified_solver_equals_emd_on_generic_cases(seed):
    # generic rows (unique optimum): the same assignment as ot.emd, so COT errors agree to 1e-9;
    # sizes and flat softmax rows like bench/methods_scorecard.py's zoo
    r = np.random.default_rng(100 + seed)
    n, K = [(300, 20), (800, 60), (500, 150)][seed % 3]
    z = r.standard_normal((n, K))
    z[np.arange(n), r.integers(0, K, n)] += [4.0, 1.0][seed % 2]
    P = softmax(z)
    w = r.dirichlet(np.ones(K))
    if seed % 2:
        w[:3] = 0.0  # absent classes
        w /= w.sum()
    counts = np.bincount(r.choice(K, size=n, p=w), minlength=K)
    k = C.transport_assign(P, counts, solver="certified")
    k0 = C.transport_assign(P, counts, solver="emd")
    np.testing.assert_array_equal(k, k0)
    e, e0 = (1 - P[np.arange(n), k]).mean(), (1 - P[np.arange(n), k0]).mean()
    assert abs(e - e0) <= 1e-9 * e0


def test_certified_cot_and_cott_equal_emd():
    # the estimates themselves: COT and COTT with the certified solver (the default) equal those
    # with ot.emd (POT's network simplex, the authors' library call) on a flat 1000 x 100 case
    r = np.random.default_rng(12)
    n, K = 1000, 100
    z = r.standard_normal((n, K))
    y = r.integers(0, K, n)
    z[np.arange(n), y] += 3.0
    P = softmax(z)
    Ps = softmax(z[r.permutation(n)] + r.standard_normal((n, K)))
    want = (C.cot(P, y, solver="emd").error, C.cott(P, Ps, y, solver="emd").error)
    got = (C.cot(P, y).error, C.cott(P, Ps, y).error)  # the default: certified
    assert abs(got[0] - want[0]) <= 1e-9 * want[0]
    assert got[1] == want[1]


def test_certified_solver_falls_back_without_certificate(monkeypatch):
    # when the repair is cut off (no certificate), transport_assign uses ot.emd
    from labelfree.methods import _transport

    r = np.random.default_rng(13)
    P = softmax(r.normal(size=(200, 8)) * 2)
    counts = np.bincount(r.integers(0, 8, 200), minlength=8)
    monkeypatch.setattr(_transport, "assign", lambda P_, c: None)
    np.testing.assert_array_equal(C.transport_assign(P, counts, solver="certified"),
                                  C.transport_assign(P, counts, solver="emd"))
    assert _transport._certify(P, _transport._start(P, counts), 1e-13, 0) is None


@pytest.mark.parametrize("seed", range(6))
def test_round_fill_start_certifies_the_lsa_start_optimum(seed):
    # the start that fills the places left in rounds (the default) and the former start (an
    # exact assignment of the leftover samples among themselves) certify the same assignment on
    # generic rows, equal to ot.emd's: skewed predictions as on a corrupted test set (most
    # samples predict a few classes, so most are left over after the greedy keep), flat rows,
    # absent classes
    from labelfree.methods import _transport as T

    r = np.random.default_rng(200 + seed)
    n, K = [(600, 10), (900, 10), (400, 40)][seed % 3]
    z = r.standard_normal((n, K))
    hot = r.integers(0, 2 if seed % 2 else K, n)  # seed odd: two classes take every argmax
    z[np.arange(n), hot] += 3.0
    P = softmax(z)
    w = r.dirichlet(np.ones(K))
    if seed >= 3:
        w[-2:] = 0.0
        w /= w.sum()
    counts = np.bincount(r.choice(K, size=n, p=w), minlength=K)
    start = T._start(P, counts)
    assert np.bincount(start, minlength=K).tolist() == counts.tolist()
    lsa = T._certify(P, T._start(P, counts, "lsa"), T.TOL, 5000)
    got = T.assign(P, counts)
    np.testing.assert_array_equal(got, lsa)
    np.testing.assert_array_equal(got, C.transport_assign(P, counts, solver="emd"))


def test_round_fill_start_falls_back_to_the_lsa_start(monkeypatch):
    # a repair cut off from the round-fill start is retried from the linear_sum_assignment start
    from labelfree.methods import _transport as T

    r = np.random.default_rng(14)
    P = softmax(r.normal(size=(300, 6)) * 2)
    counts = np.bincount(r.integers(0, 6, 300), minlength=6)
    starts = []
    real_certify = T._certify

    def certify(P_, a, tol, max_passes):
        starts.append(a.copy())
        return None if len(starts) == 1 else real_certify(P_, a, tol, max_passes)

    monkeypatch.setattr(T, "_certify", certify)
    got = T.assign(P, counts)
    np.testing.assert_array_equal(starts[0], T._start(P, counts))
    np.testing.assert_array_equal(starts[1], T._start(P, counts, "lsa"))
    np.testing.assert_array_equal(got, C.transport_assign(P, counts, solver="emd"))


def _lp_optimum(P: np.ndarray, counts: np.ndarray) -> float:
    """max sum_ik x_ik P[i, k] s.t. sum_k x_ik = 1, sum_i x_ik = counts[k], x >= 0, by HiGHS
    (scipy.optimize.linprog): the transport's optimal total from a general LP solver."""
    from scipy.optimize import linprog

    n, K = P.shape
    A = np.zeros((n + K, n * K))
    for i in range(n):
        A[i, i * K:(i + 1) * K] = 1.0
    for k in range(K):
        A[n + k, k::K] = 1.0
    res = linprog(-P.ravel(), A_eq=A, b_eq=np.r_[np.ones(n), counts], bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize("seed", range(12))
def test_transport_total_equals_the_lp_optimum(seed):
    # random small problems against an LP solver: generic rows, quantised rows (many cost ties),
    # identical rows (every assignment optimal), one-hot rows, absent classes and a class that
    # takes every sample; a cycle cancelled wrongly or a certificate passed early leaves a total
    # below the LP's
    r = np.random.default_rng(300 + seed)
    n, K = int(r.integers(20, 80)), int(r.integers(3, 12))
    P = softmax(r.normal(size=(n, K)) * r.uniform(0.5, 5))
    kind = seed % 4
    if kind == 1:
        P = np.round(P * 3) + 1e-300
        P /= P.sum(axis=1, keepdims=True)
    elif kind == 2:
        P = np.repeat(P[:1], n, axis=0)
    elif kind == 3:
        P = np.eye(K)[r.integers(0, K, n)]
    w = r.dirichlet(np.ones(K))
    w[r.integers(0, K)] = 0.0
    w /= w.sum()
    counts = np.bincount(r.choice(K, size=n, p=w), minlength=K)
    if seed == 11:
        counts = np.zeros(K, dtype=np.int64)
        counts[1] = n - 1
        counts[0] = 1
    k = C.transport_assign(P, counts)
    assert np.bincount(k, minlength=K).tolist() == counts.tolist()
    assert P[np.arange(n), k].sum() == pytest.approx(_lp_optimum(P, counts), abs=1e-9)
