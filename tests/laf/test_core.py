"""LaF estimator checks of spec section 9 (items 1-14)."""

from __future__ import annotations

import itertools
import time
import tracemalloc
import warnings

import numpy as np
import pytest
from scipy.special import log_expit
from scipy.stats import spearmanr

from labelfree.laf.core import (
    LafInputError,
    RowClasses,
    _q_and_grad,
    e_step,
    group_labels,
    multiplier,
    rank,
)
from labelfree.laf.metrics import ground_truth_accuracy, ranking_metrics

# Spec section 2.12 (paper Fig. 4).
FIG4 = np.array([[0, 0, 2], [0, 1, 0], [1, 2, 0], [2, 1, 2], [2, 2, 1], [1, 1, 1]])


def glad_data(m: int, n: int, K: int, seed: int = 0, lo: float = 0.55, hi: float = 0.95):
    """Synthetic GLAD-like predictions: accuracies U(lo, hi), errors uniform over wrong classes."""
    r = np.random.default_rng(seed)
    acc = r.uniform(lo, hi, n)
    y = r.integers(0, K, m)
    right = r.random((m, n)) < acc
    wrong = (y[:, None] + r.integers(1, K, (m, n))) % K
    return np.where(right, y[:, None], wrong), y, acc


def brute_e_step(Y, a, b, K, input_param="easiness"):
    """Posterior over all K classes by the definition (section 2.2), looping over classes."""
    x = np.outer(np.exp(b) if input_param == "easiness" else b, a)
    ls, l1s = log_expit(x), log_expit(-x) - np.log(K - 1)
    logp = np.stack([np.where(k == Y, ls, l1s).sum(axis=1) for k in range(K)], axis=1)
    logp -= logp.max(axis=1, keepdims=True)
    q = np.exp(logp)
    q /= q.sum(axis=1, keepdims=True)
    return q


def test_golden_fig4():
    """Check 1 (section 2.12): a0, b0, final a within 1e-3, 11 iterations, ranking (1, 3, 2)."""
    res = rank(FIG4, 3)
    np.testing.assert_allclose(res.a0, [0.8, 0.4, 0.6])
    np.testing.assert_allclose(res.b0, [2 / 3, 2 / 3, 1 / 3, 2 / 3, 2 / 3])
    np.testing.assert_array_equal(res.keep, [0, 1, 2, 3, 4])
    np.testing.assert_allclose(res.score, [0.6410, -0.4967, 0.5294], atol=1e-3)
    np.testing.assert_allclose(res.b, [0.2365, 1.3315, 0.1585, 1.3315, 0.2365], atol=1e-3)
    assert res.iterations == 11 and res.converged
    np.testing.assert_array_equal(res.rank, [1, 3, 2])
    np.testing.assert_array_equal(group_labels(FIG4[:5]).vote, [0, 0, 0, 2, 2])


def test_a2_paper_reading_fig4():
    """Spec 2.10 A2, the paper's reading (input_param='difficulty'): the per-input parameter is
    the difficulty alpha_i of paper Eq. 1 (fraction of models disagreeing with the vote), which
    is exactly Fig. 4 panel (2): alpha = (1/3, 1/3, 2/3, 1/3, 1/3); beta^0 is unchanged
    (0.8, 0.4, 0.6, spec 2.12); the final ranking is Fig. 4 panel (4): f1 = 1, f3 = 2, f2 = 3.
    The fitted scores differ from the code reading's (a different model, not a relabelling)."""
    res = rank(FIG4, 3, input_param="difficulty")
    np.testing.assert_allclose(res.b0, [1 / 3, 1 / 3, 2 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(res.a0, [0.8, 0.4, 0.6])
    np.testing.assert_array_equal(res.rank, [1, 3, 2])
    assert res.converged
    assert np.abs(res.score - rank(FIG4, 3).score).max() > 0.1
    np.testing.assert_array_equal(multiplier(np.array([0.5, -1.0]), "difficulty"), [0.5, -1.0])
    with pytest.raises(LafInputError, match="input_param"):
        rank(FIG4, 3, input_param="hardness")


@pytest.mark.parametrize("ip", ["easiness", "difficulty"])
@pytest.mark.parametrize("K", [2, 3, 7, 10])
def test_closed_form_e_step_matches_brute_force(K, ip):
    """Check 2: closed-form E-step equals the loop over all K classes (max abs diff < 1e-10),
    for both readings of the per-input parameter (A2: link sigma(a e^b) or sigma(a b))."""
    r = np.random.default_rng(K)
    Y, _, _ = glad_data(300, 9, K, seed=K)
    a, b = r.normal(0, 1.5, 9), r.normal(0, 1, 300)
    pi, _ = e_step(a, b, group_labels(Y), K, ip)
    q = brute_e_step(Y, a, b, K, ip)
    expected = np.take_along_axis(q, Y, axis=1)
    assert np.max(np.abs(pi - expected)) < 1e-10


@pytest.mark.parametrize("ip", ["easiness", "difficulty"])
def test_gradient_matches_finite_differences(ip):
    """Check 3: analytic gradient of Q vs central differences, relative error < 1e-5 (both A2
    readings; the difficulty reading's gradient is derived in core._q_and_grad_linear)."""
    r = np.random.default_rng(3)
    Y, _, _ = glad_data(40, 6, 5, seed=3)
    g = group_labels(Y)
    a0, b0 = g.agree.mean(0), g.agree.mean(1)
    a, b = a0 + r.normal(0, 0.3, 6), b0 + r.normal(0, 0.3, 40)
    pi, _ = e_step(a, b, g, 5, ip)
    _, ga, gb = _q_and_grad(a, b, pi, a0, b0, 5, ip)
    theta = np.concatenate([a, b])
    eps = 1e-6
    num = np.empty_like(theta)
    for i in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[i] += eps
        tm[i] -= eps
        qp = _q_and_grad(tp[:6], tp[6:], pi, a0, b0, 5, ip)[0]
        qm = _q_and_grad(tm[:6], tm[6:], pi, a0, b0, 5, ip)[0]
        num[i] = (qp - qm) / (2 * eps)
    ana = np.concatenate([ga, gb])
    assert np.linalg.norm(ana - num) / np.linalg.norm(num) < 1e-5


def _q_and_grad_every_row(a, b, pi, a0, b0, K):
    """The easiness reading's Q and gradient with every row's transcendentals computed (no
    classes of equal rows): the reference the shared-row evaluation must equal bit for bit."""
    eb = np.exp(b)
    neg = a < 0
    e = np.exp(np.outer(eb, -np.abs(a)))
    log1p_sum = np.log1p(e).sum()
    sig = np.reciprocal(e + 1.0)
    sig = np.where(neg[None, :], 1.0 - sig, sig)
    pa = pi @ a
    wrong = eb @ (a.sum() - pa) + np.log(K - 1.0) * (pi.size - pi.sum())
    da, db = a - a0, b - b0
    q = (pi.shape[0] * np.log(1.0 / K) + (eb.sum() * a[neg].sum() - log1p_sum) - wrong
         - 0.5 * (da @ da + db @ db) - 0.5 * np.log(2.0 * np.pi) * (a.size + b.size))
    return float(q), pi.T @ eb - sig.T @ eb - da, eb * (pa - sig @ a) - db


def test_q_and_grad_on_equal_rows_is_exact():
    """The transcendentals run once per class of equal b_i and are gathered back
    (core.RowClasses): Q and its gradient must equal the every-row evaluation bit for bit, also
    when the classes kept from the previous call no longer hold (a class splits) or merge."""
    Y, _, _ = glad_data(60, 7, 4, seed=5)
    g = group_labels(Y)
    a0, b0 = g.agree.mean(0), g.agree.mean(1)  # b0: few distinct values, many equal rows
    a = a0 + np.random.default_rng(5).normal(0, 0.5, 7)
    a[[1, 4]] = -np.abs(a[[1, 4]])  # models worse than chance: the other branch of sigma
    pi, _ = e_step(a, b0, g, 4)
    split = b0.copy()
    split[np.flatnonzero(b0 == b0[0])[1:]] += 1e-9  # rows of one class part
    merged = np.round(b0 * 2) / 2  # classes fuse
    rows = RowClasses()
    for b in (b0, split, b0, merged, b0 + 0.25):
        assert np.unique(b).size < b.size
        got = _q_and_grad(a, b, pi, a0, b0, 4, rows=rows)
        ref = _q_and_grad_every_row(a, b, pi, a0, b0, 4)
        assert got[0] == ref[0]
        assert got[1].tobytes() == ref[1].tobytes() and got[2].tobytes() == ref[2].tobytes()
        b_first, row = rows.first, rows.row
        assert (b[b_first][row] == b).all() and b_first.size < b.size  # kept classes may be finer


@pytest.mark.parametrize("ip", ["easiness", "difficulty"])
@pytest.mark.parametrize("data", ["fig4", "glad"])
def test_gem_monotone(data, ip):
    """Check 4: observed-data log posterior is non-decreasing over EM iterations."""
    Y = FIG4 if data == "fig4" else glad_data(500, 12, 4, seed=4)[0]
    K = 3 if data == "fig4" else 4
    res = rank(Y, K, track_logpost=True, input_param=ip)
    lp = np.asarray(res.logpost_history)
    assert lp.size == res.iterations + 1
    assert np.all(np.diff(lp) >= -1e-8 * np.abs(lp[:-1]))


def test_pruning_invariance():
    """Check 5: appending unanimous rows leaves the scores bit-identical."""
    Y, _, _ = glad_data(400, 10, 5, seed=5)
    r = np.random.default_rng(5)
    extra = np.repeat(r.integers(0, 5, (123, 1)), 10, axis=1)
    a = rank(Y, 5).score
    b = rank(np.concatenate([extra[:60], Y, extra[60:]]), 5).score
    np.testing.assert_array_equal(a, b)


def test_model_order_equivariance():
    """Check 6: permuting the columns permutes the scores (ranks identical, scores within 1e-3)."""
    Y, _, _ = glad_data(800, 12, 6, seed=6)
    perm = np.random.default_rng(6).permutation(12)
    a = rank(Y, 6)
    b = rank(Y[:, perm], 6)
    np.testing.assert_allclose(b.score, a.score[perm], atol=1e-3)
    np.testing.assert_array_equal(b.rank, a.rank[perm])


def test_class_relabelling_invariance():
    """Check 7: a bijection of class ids leaves the scores unchanged when no vote is tied."""
    Y, _, _ = glad_data(600, 11, 5, seed=7, lo=0.7)
    counts = np.stack([(k == Y).sum(1) for k in range(5)], axis=1)
    top2 = np.sort(counts, axis=1)[:, -2:]
    Y = Y[top2[:, 1] > top2[:, 0]]  # drop rows whose vote is tied
    bij = np.array([3, 0, 4, 1, 2])
    a = rank(Y, 5).score
    b = rank(bij[Y], 5)
    # Identical up to floating-point summation order (the E-step groups labels in id order).
    np.testing.assert_allclose(a, b.score, atol=1e-5)
    np.testing.assert_array_equal(rank(Y, 5).rank, b.rank)


@pytest.mark.parametrize("K", [2, 10, 100])
def test_recovery_on_glad_data(K):
    """Check 8: m = 5000, n = 20, accuracies U(0.55, 0.95): Spearman(accuracy, score) >= 0.98."""
    Y, y, acc = glad_data(5000, 20, K, seed=K)
    res = rank(Y, K)
    assert spearmanr(acc, res.score).statistic >= 0.98
    assert spearmanr(ground_truth_accuracy(Y, y), res.score).statistic >= 0.98


def test_clone_failure_negative_control():
    """Check 9: 5 models + 6 identical copies of an accuracy-0.6 model: clones on top, rho < 0."""
    r = np.random.default_rng(9)
    m, K = 3000, 10
    y = r.integers(0, K, m)
    acc = np.array([0.95, 0.9, 0.85, 0.8, 0.75, 0.6])
    right = r.random((m, 6)) < acc
    Y = np.where(right, y[:, None], (y[:, None] + r.integers(1, K, (m, 6))) % K)
    Y = np.concatenate([Y[:, :5], np.repeat(Y[:, 5:], 6, axis=1)], axis=1)
    res = rank(Y, K)
    truth = ground_truth_accuracy(Y, y)
    assert set(np.argsort(-res.score)[:6]) == set(range(5, 11))
    assert spearmanr(truth, res.score).statistic < 0


def test_ablations_and_ground_truth_on_pruned_rows():
    """Check 10: w/o optimizing ranking identical with/without pruning; ground truth on T and T'."""
    Y, y, _ = glad_data(700, 15, 4, seed=10)
    Y[:100] = y[:100, None]  # unanimous correct rows
    Y[100:150] = ((y[100:150] + 1) % 4)[:, None]  # unanimous wrong rows
    a = rank(Y, 4, optimize_params=False)
    b = rank(Y, 4, optimize_params=False, prune=False)
    np.testing.assert_array_equal(a.rank, b.rank)
    keep = a.keep
    assert keep.min() >= 150
    from scipy.stats import rankdata

    full = rankdata(ground_truth_accuracy(Y, y), method="min")
    pruned = rankdata(ground_truth_accuracy(Y[keep], y[keep]), method="min")
    np.testing.assert_array_equal(full, pruned)


def test_numerics_large_logits_and_cap():
    """Check 11: posteriors in [0, 1] summing to 1; no NaN/inf at |a e^b| ~ 1e3; cap honoured."""
    Y, _, _ = glad_data(200, 8, 6, seed=11)
    g = group_labels(Y)
    a = np.array([300.0, -250, 120, 5, -3, 1000, -1000, 0.1])
    b = np.log(np.linspace(0.2, 1.0, 200))
    pi, log_z = e_step(a, b, g, 6)
    assert np.all(np.isfinite(pi)) and np.all(np.isfinite(log_z))
    assert pi.min() >= 0 and pi.max() <= 1
    q = brute_e_step(Y, a, b, 6)
    np.testing.assert_allclose(q.sum(1), 1)
    np.testing.assert_allclose(pi, np.take_along_axis(q, Y, 1), atol=1e-10)
    q_val, ga, gb = _q_and_grad(a, b, pi, g.agree.mean(0), g.agree.mean(1), 6)
    assert np.isfinite(q_val) and np.all(np.isfinite(ga)) and np.all(np.isfinite(gb))
    res = rank(Y, 6)
    assert res.converged and np.all(np.isfinite(res.score))
    capped = rank(FIG4, 3, max_iter=3)
    assert capped.iterations == 3 and not capped.converged


def test_degenerate_inputs():
    """Check 12 and section 2.10 A6: identical models, n = 2, K = 2, invalid inputs."""
    Y = np.repeat(np.arange(5)[:, None] % 3, 4, axis=1)
    res = rank(Y, 3)
    assert res.degenerate and np.ptp(res.score) == 0 and res.keep.size == 0
    met = ranking_metrics(np.array([0.1, 0.2, 0.3, 0.4]), res.score)
    assert np.isnan(met["spearman"]) and np.isnan(met["kendall"])
    with pytest.warns(UserWarning, match="2 models"):
        rank(np.array([[0, 1], [1, 1], [2, 0]]), 3)
    Yb, yb, acc = glad_data(2000, 8, 2, seed=12)
    assert spearmanr(acc, rank(Yb, 2).score).statistic > 0.9
    for bad, K, msg in [
        (np.zeros((4, 1), int), 3, "at least 2 models"),
        (np.array([[0, 3], [1, 1]]), 3, "outside 0..2"),
        (np.array([[0, -1], [1, 1]]), 3, "outside"),
        (np.array([[0.0, np.nan], [1, 1]]), 3, "NaN"),
        (np.array([[0.5, 1], [1, 1]]), 3, "non-integer"),
        (np.array([0, 1, 2]), 3, "2-D"),
        (FIG4, 1, "K must be"),
        (np.array([["a", "b"]]), 3, "dtype"),
    ]:
        with pytest.raises(LafInputError, match=msg):
            rank(bad, K)


def test_determinism():
    """Check 13 (LaF part): two runs give identical output."""
    Y, _, _ = glad_data(1000, 10, 7, seed=13)
    a, b = rank(Y, 7), rank(Y, 7)
    np.testing.assert_array_equal(a.score, b.score)
    assert a.iterations == b.iterations and a.q == b.q


@pytest.mark.slow
def test_scale_large_k():
    """Check 14: m = 100,000, n = 20, K = 1000 well under a minute and under 2 GB.

    CPU time (not wall time) is bounded, so a loaded shared machine does not make it flaky.
    """
    Y, _, acc = glad_data(100_000, 20, 1000, seed=14)
    tracemalloc.start()
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = rank(Y, 1000)
    elapsed = time.process_time() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert elapsed < 60, elapsed
    assert peak < 2 * 1024**3, peak
    assert spearmanr(acc, res.score).statistic > 0.98


def test_vote_ties_go_to_smallest_class():
    """Section 2.4: majority-vote ties broken to the smallest class id (scipy.stats.mode)."""
    Y = np.array([[4, 2, 2, 4], [3, 1, 0, 2], [5, 5, 1, 1], [0, 0, 0, 1]])
    np.testing.assert_array_equal(group_labels(Y).vote, [2, 0, 1, 0])
    for row in itertools.permutations([7, 3, 3, 7, 1]):
        assert group_labels(np.array([row])).vote[0] == 3
