"""Few-label methods (scorecard spec sections 9-11): seeded, statistical and hand checks."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.methods import fewlabel as F
from labelfree.numerics import softmax


def _zoo(M: int, N: int, K: int, accs, seed: int = 0):
    """Probabilities whose argmax is right with probability accs[m]."""
    r = np.random.default_rng(seed)
    y = r.integers(0, K, N)
    right = r.random((M, N)) < np.asarray(accs)[:, None]
    pred = np.where(right, y, (y + r.integers(1, K, (M, N))) % K)
    z = r.normal(size=(M, N, K))
    z[np.arange(M)[:, None], np.arange(N)[None], pred] += 2.5
    return softmax(z), y


# ------------------------------------------------------------------------------ Active Testing


def test_lure_weights_uniform_and_full_pool():
    N, b = 10, 4
    L = np.array([1.0, 0.0, 1.0, 1.0])
    q_uniform = 1.0 / (N - np.arange(1, b + 1) + 1)  # spec 11 check 2: v_j = 1 -> plain mean
    assert F.lure_risk(L, q_uniform, N).tolist() == pytest.approx(np.cumsum(L) / np.arange(1, 5))
    Lf = np.array([1.0, 0.0, 0.0, 1.0])  # check 3: M = N -> the true risk, whatever q
    assert F.lure_risk(Lf, np.array([0.5, 0.2, 0.7, 1.0]), 4)[-1] == pytest.approx(0.5)


def test_lure_hand_case():
    # N = 4, M = 2, q = (0.5, 0.5): v_1 = 1 + 2/3 (1/(4*0.5) - 1) = 2/3, v_2 = 1 + 2/2 (1/(3*0.5) - 1)
    # = 2/3; R = (v_1 L_1 + v_2 L_2) / 2 with L = (1, 1) -> 2/3 (spec 11 LURE formula by hand)
    assert F.lure_risk(np.ones(2), np.array([0.5, 0.5]), 4)[-1] == pytest.approx(2 / 3)


def test_active_testing_is_unbiased_over_seeds():
    P, y = _zoo(1, 200, 5, [0.7], 3)
    true = float(np.mean(P[0].argmax(1) == y))
    res = F.active_testing(P[0], y, 15, seed=11, n_seeds=4000)
    est = res.accuracy[:, -1]
    se = est.std() / np.sqrt(len(est))
    assert abs(est.mean() - true) < 3 * se  # spec 11 check 4
    biased = res.biased[:, -1].mean()  # the plain mean over the acquired points is biased down
    assert biased < true - 3 * se
    assert np.all(res.q > 0) and np.all(res.q <= 1)


def test_active_testing_pmf_ratio_and_determinism():
    P, y = _zoo(1, 100, 4, [0.6], 4)
    a = F.active_testing(P[0], y, 30, seed=5, n_seeds=3)
    b = F.active_testing(P[0], y, 30, seed=5, n_seeds=3)
    assert np.array_equal(a.indices, b.indices) and np.array_equal(a.accuracy, b.accuracy)
    assert all(len(set(row)) == 30 for row in a.indices.tolist())  # without replacement
    # check 1: the first pmf is the floored acquisition a = max(1 - max P, 0.05 max), so the
    # recorded q values are entries of it and max/min <= 20
    conf = 1 - P[0].max(1)
    s = np.maximum(conf, 0.05 * conf.max())
    pmf = s / s.sum()
    assert pmf.max() / pmf.min() <= 20 + 1e-9
    assert set(np.round(a.q[:, 0], 12)) <= set(np.round(pmf, 12))


# ------------------------------------------------------------------------------- ModelPicker


def test_model_picker_identical_models_never_query():
    Y = np.tile(np.random.default_rng(0).integers(0, 3, 50), (4, 1))
    r = F.model_picker(Y, np.zeros(50, int), [5], 10.0, seed=0, n_runs=3, stop_at_budget=False)
    assert r.queries.tolist() == [0, 0, 0]  # spec 9 check 1


def test_model_picker_picks_true_best_on_easy_zoo():
    P, y = _zoo(5, 600, 4, [0.5, 0.6, 0.9, 0.55, 0.65], 1)
    Y = P.argmax(2)
    # huge tuning_par: u = 1 on every disagreement -> L counts mistakes there (check 3)
    r = F.model_picker(Y, y, [400], 1e6, seed=2, n_runs=5, stop_at_budget=False)
    assert r.final_best.tolist() == [2] * 5
    tune = F.tune_model_picker(Y, y, [40], seed=0, grid_size=12, reals=3)
    rb = F.model_picker(Y, y, [40], tune[40], seed=3, n_runs=40)
    assert np.mean(rb.best[:, 0] == 2) > 0.8
    again = F.model_picker(Y, y, [40], tune[40], seed=3, n_runs=40)
    assert np.array_equal(rb.best, again.best) and np.array_equal(rb.scores, again.scores)


def _model_picker_literal(Y, y, budgets, tp, seed, R):
    """Oracle: the per-step form of spec 9 as first written here (runs x models, the (R, M, M)
    class-equality tensor), same RNG call order as F.model_picker; full stream."""
    M, N = Y.shape
    rng = np.random.default_rng(seed)
    tp = np.broadcast_to(np.asarray(tp, dtype=np.float64), (R,))
    perm = np.argsort(rng.random((R, N)), axis=1)
    eta0 = np.sqrt(np.log(M) / 2.0)
    L = np.zeros((R, M))
    nq = np.zeros(R, dtype=np.int64)
    best = np.full((R, len(budgets)), -1)
    scores = np.zeros((R, len(budgets), M))
    wrong = y[None, :] != Y
    for t in range(1, N + 1):
        x = perm[:, t - 1]
        Yt = Y[:, x].T
        eta = eta0 / np.sqrt(t)
        w = np.exp(-eta * (L - L.min(axis=1, keepdims=True)))
        w /= w.sum(axis=1, keepdims=True)
        W = np.einsum("rmk,rk->rm", Yt[:, :, None] == Yt[:, None, :], w)
        u = tp * (W * (1.0 - W)).max(axis=1)
        u = np.where(np.isfinite(u), np.minimum(u, 1.0), 0.0)
        dis = (Yt != Yt[:, :1]).any(axis=1)
        u = np.where(dis & (u > 0), np.minimum(np.maximum(u, eta), 1.0), 0.0)
        z = dis & (rng.random(R) < u)
        if z.any():
            L[z] += wrong[:, x[z]].T / u[z, None]
            nq[z] += 1
            hit = z[:, None] & (nq[:, None] == np.asarray(budgets)[None, :])
            if hit.any():
                r_i, b_i = np.nonzero(hit)
                best[r_i, b_i] = F._argmin_random(L[r_i], rng)
                scores[r_i, b_i] = -L[r_i]
    return best, scores, nq


@pytest.mark.parametrize("tp", [0.02, 1.0, 50.0])
def test_model_picker_equals_the_literal_loop(tp):
    # the bincount / models-by-runs rewrite makes the same queries and returns the same models
    r = np.random.default_rng(12)
    M, N, K = 7, 400, 30
    y = r.integers(0, K, N)
    Y = np.where(r.random((M, N)) < np.linspace(0.5, 0.8, M)[:, None], y, r.integers(0, K, (M, N)))
    res = F.model_picker(Y, y, [5, 20], tp, seed=4, n_runs=9, stop_at_budget=False)
    best, scores, nq = _model_picker_literal(Y, y, [5, 20], tp, 4, 9)
    assert np.array_equal(res.queries, nq) and nq.min() >= 5
    reached = best >= 0
    assert reached[:, 0].all()
    assert np.array_equal(res.best[reached], best[reached])
    np.testing.assert_allclose(res.scores[reached], scores[reached], rtol=1e-12)


# -------------------------------------------------------------------------------------- CODA


def test_coda_pbest_properties():
    P, y = _zoo(4, 120, 3, [0.5, 0.7, 0.6, 0.8], 2)
    c = F.Coda(P)
    pb = c.pbest()
    assert pb.sum() == pytest.approx(1) and np.all(pb >= 0) and c.pi.sum() == pytest.approx(1)
    perm = np.array([2, 0, 3, 1])  # check 3: permuting models permutes P_best
    assert F.Coda(P[perm]).pbest() == pytest.approx(pb[perm], rel=1e-9)
    same = F.Coda(np.stack([P[0]] * 3)).pbest()  # check 2
    assert same == pytest.approx(np.full(3, 1 / 3))


def test_coda_add_label_touches_only_row_y():
    P, y = _zoo(3, 60, 4, [0.5, 0.7, 0.6], 5)
    c = F.Coda(P)
    D0 = c.D.copy()
    c.add_label(7, 2)
    diff = c.D - D0
    assert np.count_nonzero(diff[:, [0, 1, 3]]) == 0  # check 4
    assert np.allclose(diff[np.arange(3), 2, c.pred[:, 7]], 0.01)
    assert np.isclose(diff.sum(), 0.03)


def test_coda_candidates_and_best_model():
    P, y = _zoo(4, 150, 3, [0.45, 0.55, 0.85, 0.5], 6)
    c = F.Coda(P)
    cand = c.candidates()
    agree = (c.pred == c.pred[:1]).all(axis=0)
    assert not agree[cand].any()  # check 5
    r = F.coda(P, y, 25, seed=0)
    assert r.best[-1] == 2 and len(set(r.indices.tolist())) == 25
    assert np.array_equal(r.indices, F.coda(P, y, 25, seed=0).indices)  # check 6


def test_coda_eig_equals_the_dense_form():
    """The H-classes rewrite of the EIG equals the literal per-(item, class) quadrature (spec 10)."""
    P, y = _zoo(5, 80, 7, [0.4, 0.5, 0.6, 0.7, 0.55], 8)
    c = F.Coda(P)
    for n, lab in [(3, 1), (10, 4)]:
        cand = c.candidates()
        assert c.eig(cand) == pytest.approx(c.eig_dense(cand), rel=1e-9, abs=1e-12)
        c.add_label(n, lab)


def test_coda_cached_state_equals_recomputation_from_d():
    """After labels, the cached A / pi, P_best and EIG equal their spec 10 formulas recomputed
    from D: pi_n from A[h, n, c] = sum_j D[h, c, j] P[h, n, j], P_best from the Beta grids."""
    P, y = _zoo(6, 200, 9, [0.4, 0.5, 0.6, 0.7, 0.55, 0.65], 13)
    c = F.Coda(P.astype(np.float32))
    Pf = P.astype(np.float32).astype(np.float64)
    for n in [5, 17, 40, 41, 99, 150]:
        c.add_label(n, int(y[n]))
    A = np.einsum("hnj,hcj->nc", Pf, c.D)
    pi_n = A / np.maximum(A.sum(axis=1, keepdims=True), 1e-12)
    np.testing.assert_allclose(c.pi_n, pi_n, rtol=1e-12)
    np.testing.assert_allclose(c.pi, pi_n.sum(0) / pi_n.sum(), rtol=1e-12)
    al = np.einsum("hcc->hc", c.D)
    pdf, lc = F._beta_pdf_logcdf(al.T, (c.D.sum(axis=2) - al).T)
    np.testing.assert_allclose(c.pbest(), c.pi @ F._pbest_rows(pdf, lc), rtol=1e-12)
    cand = c.candidates()
    np.testing.assert_allclose(c.eig(cand), c.eig_dense(cand), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("multiplier", [2.0, 400.0])
def test_coda_key_rows_equal_the_literal_quadrature(multiplier):
    """``Coda._fill_keys`` (products over the grid) equals ``_pbest_rows`` on the hypothetical
    Beta grids of every key (spec 10 step 3), with the default prior and a 200 times stronger
    (peaked Betas); the literal form's clip of the log-product at -80, the one stated difference,
    acts in both (asserted: the cdf is 0 at the first grid point)."""
    P, y = _zoo(6, 150, 5, [0.4, 0.5, 0.6, 0.7, 0.55, 0.65], 21)
    c = F.Coda(P, multiplier=multiplier)
    keys = np.arange(len(c._key_c))
    c._fill_keys(keys)
    cls, hit = c._key_c, c._key_hit[..., None]
    pdf = np.where(hit, c._pdfA[cls], c._pdfB[cls])
    lc = np.where(hit, c._lcA[cls], c._lcB[cls])
    want = F._pbest_rows(pdf, lc)
    np.testing.assert_allclose(c._key_r, want, rtol=1e-10, atol=1e-14)
    clipped = (lc.sum(axis=-2, keepdims=True) - lc < -80).any()
    assert clipped


def test_coda_eig_per_key_entropy_equals_the_dense_form():
    """With more candidate pairs than (class, model set) keys, ``Coda.eig`` takes the entropy once
    per key and reads it per pair: equal to the literal form, before and after labels (a key read
    for the wrong pair, or a stale key after a label of its class, moves the EIG)."""
    P, y = _zoo(8, 400, 4, [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65], 31)
    c = F.Coda(P)
    assert len(c._key_c) < len(c._pair_n)  # the per-key branch is the one taken
    for n in (0, 5, 9):
        cand = c.candidates()
        np.testing.assert_allclose(c.eig(cand), c.eig_dense(cand), rtol=1e-9, atol=1e-12)
        c.add_label(n, int(y[n]))
