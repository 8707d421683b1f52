"""Known-answer and invariant tests of the label-free estimators (scorecard spec sections 1-8)."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.methods import estimators as E
from labelfree.methods.arrays import MethodInputError
from labelfree.numerics import softmax


def _probs(n: int, K: int, seed: int = 0, scale: float = 2.0) -> np.ndarray:
    return softmax(np.random.default_rng(seed).normal(size=(n, K)) * scale)


# ------------------------------------------------------------------------- average confidence


def test_average_confidence_hand_and_syp():
    # hand computation: (0.7 + 0.5) / 2
    P = np.array([[0.7, 0.2, 0.1], [0.4, 0.5, 0.1]])
    assert E.average_confidence(P) == pytest.approx(0.6)
    from labelfree.syp.baselines import conf_score

    Q = _probs(50, 4)
    assert E.average_confidence(Q) == pytest.approx(conf_score(Q))
    assert E.average_confidence(np.stack([P, P[::-1]])).tolist() == pytest.approx([0.6, 0.6])


# ------------------------------------------------------------------------------------- MaNo


def test_mano_taylor_branch_hand_computation():
    # spec 1 step 1: delta = mean(ln(e+1) - 0.5, ln 2 - 0); step 2 Taylor: row 1 V = [2.5, 1] -> [1.5, 0]
    # -> P = [1, 0]; row 2 constant -> all zeros; step 3: S = (1 / (2*2))^(1/4)
    r = E.mano(np.array([[1.0, 0.0], [0.0, 0.0]]))
    assert r.branch == "taylor"
    assert r.delta == pytest.approx((np.log(np.e + 1) - 0.5 + np.log(2)) / 2)
    assert r.score == pytest.approx(0.25**0.25)


def test_mano_softmax_branch_and_bounds():
    K = 200  # constant rows: delta = ln 200 = 5.30 > 5 -> softmax branch, S = 1/K (spec 1 check 1)
    r = E.mano(np.zeros((10, K)))
    assert r.branch == "softmax" and r.delta == pytest.approx(np.log(K))
    assert r.score == pytest.approx(1.0 / K)
    z = np.random.default_rng(1).normal(size=(30, 6))
    s = E.mano(z).score
    assert ((5 ** -3) / 6) ** 0.25 <= s <= 6 ** -0.25  # Taylor-branch bounds (check 1)


def test_mano_branch_flips_at_threshold_and_invariances():
    z = np.random.default_rng(2).normal(size=(40, 5))
    base = E.mano(z).delta
    # delta is row-shift invariant (check 2) and grows with the logit scale (check 3)
    assert E.mano(z + np.arange(40)[:, None]).delta == pytest.approx(base)
    lo, hi = 1.0, 100.0
    for _ in range(60):  # bisection for the scale where delta crosses 5
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if E.mano(z * mid).delta <= 5 else (lo, mid)
    assert E.mano(z * lo).branch == "taylor" and E.mano(z * hi).branch == "softmax"
    perm_r, perm_c = np.random.default_rng(3).permutation(40), np.random.default_rng(4).permutation(5)
    assert E.mano(z[perm_r][:, perm_c]).score == pytest.approx(E.mano(z).score)  # check 5


# ------------------------------------------------------------------------------- nuclear norm


def test_nuclear_norm_known_values():
    K = 5  # spec 2 checks 1-2 (third-party normalisation)
    assert E.nuclear_norm(np.full((20, K), 1 / K)) == pytest.approx(1 / K)
    same = np.zeros((20, K))
    same[:, 2] = 1
    assert E.nuclear_norm(same) == pytest.approx(1 / np.sqrt(K))
    assert E.nuclear_norm(np.eye(K)[np.arange(20) % K]) == pytest.approx(1.0)
    assert E.nuclear_norm(np.eye(3), normalise="none") == pytest.approx(3.0)


def test_nuclear_norm_gram_matches_svd():
    P = _probs(300, 80)
    assert E.nuclear_norm(P, method="gram") == pytest.approx(E.nuclear_norm(P, method="svd"), rel=1e-6)
    assert 0 <= E.nuclear_norm(P) <= 1


# ------------------------------------------------------------------------------ Frechet distance


def _syp_fd(a, b):
    from labelfree.syp.indicators import feature_stats, frechet_distance

    return frechet_distance(feature_stats(a), feature_stats(b))


def test_frechet_distance_one_dimension_by_hand():
    # syp spec 2.2 with D = 1: (m1 - m2)^2 + v1 + v2 - 2 sqrt(v1 v2) = (m1 - m2)^2 + (sd1 - sd2)^2
    a = np.array([[0.0], [2.0], [4.0]])  # mean 2, unbiased variance 4
    b = np.array([[1.0], [2.0]])  # mean 1.5, unbiased variance 0.5
    assert E.frechet_distance(a, b) == pytest.approx(0.25 + (2 - np.sqrt(0.5)) ** 2, rel=1e-12)


@pytest.mark.parametrize("shift", [0.0, 0.05, 1.0])
def test_frechet_distance_equals_syp_sqrtm(shift):
    # the eigen form equals syp.indicators.frechet_distance (scipy sqrtm) within 1e-6 relative,
    # also when the two sets come from one distribution (FD small against the traces)
    r = np.random.default_rng(9)
    D = 24
    A = r.normal(size=(D, D)) / np.sqrt(D)
    a = (r.normal(size=(800, D)) @ A + r.integers(0, 7, 800)[:, None] % 3).astype(np.float32)
    b = (r.normal(size=(600, D)) @ (A + shift * r.normal(size=(D, D)) / np.sqrt(D))
         + shift + r.integers(0, 7, 600)[:, None] % 3).astype(np.float32)
    ref = _syp_fd(a, b)
    assert E.frechet_distance(a, b) == pytest.approx(ref, rel=1e-6)
    assert E.frechet_distance(b, a) == pytest.approx(ref, rel=1e-6)  # symmetric
    x = a.astype(np.float64)
    assert abs(E.frechet_distance(x, x)) < 1e-9 * np.trace(np.cov(x, rowvar=False))
    assert np.array_equal(x, a.astype(np.float64))  # input not modified


def test_frechet_distance_singular_covariance_is_syp_value():
    # N < D: singular covariance -> syp's sqrtm path (with its eps retry) gives the value
    r = np.random.default_rng(10)
    a, b = r.normal(size=(5, 8)), r.normal(size=(30, 8)) + 0.3
    assert E.frechet_distance(a, b) == pytest.approx(_syp_fd(a, b), rel=1e-6)


# ------------------------------------------------------------------------------------ ATC, DoC


def test_atc_threshold_hand_case():
    # spec 4: sorted MC scores [0.55, 0.6, 0.8, 0.9], one error -> t = sorted[n_inc - 1] = 0.55
    Ps = np.array([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6], [0.55, 0.45]])
    ys = np.array([0, 0, 0, 0])  # third is wrong
    assert E.atc_threshold(E.atc_scores(Ps, "MC"), Ps.argmax(1) == ys) == 0.55
    # target = source -> source accuracy + 1/n_src (check 2)
    assert E.atc(Ps, Ps, ys) == pytest.approx(0.75 + 0.25)
    assert E.atc(Ps, Ps, ys, threshold_rule="exact") == pytest.approx(0.75)


def test_atc_invariance_and_perfect_source_warning():
    P, Ps = _probs(100, 4, 1), _probs(80, 4, 2)
    ys = np.random.default_rng(5).integers(0, 4, 80)
    ne = E.atc(P, Ps, ys, score="NE")
    t = E.atc_threshold(E.atc_scores(Ps, "NE") / np.log(2), Ps.argmax(1) == ys)  # log2 (check 3)
    assert np.mean(E.atc_scores(P, "NE") / np.log(2) >= t) == pytest.approx(ne)
    with pytest.warns(UserWarning, match="threshold stays 0.0"):
        assert E.atc(P, Ps, Ps.argmax(1)) == 1.0  # MC >= 0 always (check 5)


def test_doc_known_answers():
    Ps = _probs(60, 3, 1)
    ys = np.random.default_rng(2).integers(0, 3, 60)
    acc = np.mean(Ps.argmax(1) == ys)
    assert E.doc(Ps, Ps, ys) == pytest.approx(acc)  # spec 5 check 1
    P = np.array([[0.6, 0.4, 0.0], [0.2, 0.5, 0.3]])  # mean max = 0.55
    assert E.doc(P, Ps, ys) == pytest.approx(acc + 0.55 - Ps.max(1).mean())
    from labelfree.syp.baselines import doc_estimate

    assert E.doc(P, Ps, ys) == pytest.approx(doc_estimate(P, Ps, acc) / 100)


# ------------------------------------------------------------------------------------------ GDE


def test_gde_hand_case():
    Y = np.array([[0, 1, 2, 0], [0, 1, 1, 1], [0, 1, 2, 0]])
    # dis(0,1) = 2/4, dis(0,2) = 0, dis(1,2) = 2/4 (spec 6)
    assert E.gde(Y, "next").tolist() == pytest.approx([0.5, 0.5, 1.0])
    assert E.gde(Y).tolist() == pytest.approx([0.75, 0.5, 0.75])
    assert E.gde(Y, {0: 2, 1: 0, 2: 0}).tolist() == pytest.approx([1.0, 0.5, 1.0])
    assert E.gde(np.zeros((3, 5), int)).tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------------------------------- ALine


def _noisy_preds(M: int, n: int, K: int, accs, seed: int):
    r = np.random.default_rng(seed)
    y = r.integers(0, K, n)
    Y = np.where(r.random((M, n)) < np.asarray(accs)[:, None], y, r.integers(0, K, (M, n)))
    return Y, y


def test_aline_target_equals_source():
    Y, y = _noisy_preds(5, 400, 10, [0.5, 0.6, 0.7, 0.8, 0.9], 0)
    acc = (y == Y).mean(1)
    r = E.aline(Y, acc, Y)  # spec 7 check 1
    assert r.slope == pytest.approx(1) and r.bias == pytest.approx(0, abs=1e-12)
    assert r.r2 == pytest.approx(1)
    assert np.allclose(r.aline_s, acc) and np.allclose(r.aline_d, acc)


def test_aline_filter_and_isolated_model():
    Y, y = _noisy_preds(4, 300, 10, [0.5, 0.6, 0.7, 0.8], 1)
    Y = np.vstack([Y, Y[3]])  # model 4 == model 3: agreement 1 with it, filtered (check 2)
    acc = (y == Y).mean(1)
    r = E.aline(Y, acc, Y)
    assert not any(set(p) == {3, 4} for p in r.kept.tolist())
    # model 4 predicts a class no other model predicts: agreement 0 < 0.05 with everyone, so it is
    # in no kept pair and min-norm lstsq gives it w = 0 -> ALine-D = Phi(0) = 0.5 (check 6)
    Y2 = np.vstack([Y[:4], np.full(300, 99)])
    r2 = E.aline(Y2, (y == Y2).mean(1), Y2)
    assert 4 not in r2.kept.ravel() and r2.aline_d[4] == pytest.approx(0.5)


# ------------------------------------------------------------------------------------ Dispersion


def test_dispersion_hand_and_invariances():
    X = np.array([[0.0], [2.0], [10.0], [12.0]])
    y = np.array([0, 0, 1, 1])
    # mu = 6, class means 1 and 11: (2*25 + 2*25) / (C - 1 = 1) -> ln 100 (spec 8)
    assert E.dispersion(X, y) == pytest.approx(np.log(100.0))
    assert E.dispersion(X * 3, y) == pytest.approx(np.log(100.0) + 2 * np.log(3))  # check 2
    assert E.dispersion(X + 7, 1 - y) == pytest.approx(np.log(100.0))  # check 1
    assert E.dispersion(X, y, num_classes=3) == pytest.approx(np.log(50.0))
    with pytest.raises(MethodInputError):
        E.dispersion(X, np.zeros(4, int))  # C < 2 (check 4)


def test_ensemble_agreement_hand():
    P = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.6, 0.4]], [[0.7, 0.3], [0.1, 0.9]]])
    # mean: [[0.733, 0.267], [0.3, 0.7]] -> ensemble [0, 1]; model 1 predicts [0, 0]
    assert E.ensemble_agreement(P).tolist() == pytest.approx([1.0, 0.5, 1.0])


def test_mano_matches_a_plain_numpy_transcription():
    """The torch implementation against a line-by-line numpy reading of algs/mano.py (spec 1)."""
    from scipy.special import logsumexp

    for scale in (0.5, 8.0):  # Taylor and softmax branches
        z = np.random.default_rng(7).normal(size=(64, 9)) * scale
        delta = np.mean(logsumexp(z, axis=1) - z.mean(axis=1))
        if delta > 5:
            P = softmax(z)
        else:
            V = 1 + z + z**2 / 2
            V = V - V.min(axis=1, keepdims=True)
            P = V / np.maximum(V.sum(axis=1, keepdims=True), 1e-12)
        ref = np.linalg.norm(P.ravel(), 4) / (P.size ** 0.25)
        assert E.mano(z).score == pytest.approx(ref, rel=1e-12)
        assert E.mano(z.astype(np.float32)).score == pytest.approx(ref, rel=1e-5)  # check 7


@pytest.mark.parametrize(("K", "branch"), [(10, "taylor"), (200, "softmax")])
def test_mano_from_probs_equals_the_fallback(K, branch):
    """mano_from_probs is mano on row-centred log-probabilities (delta >= ln K picks the branch)."""
    P = _probs(50, K, 3, 1.0)
    a, b = E.mano_from_probs(P), E.mano(E.centred_log_probs(P))
    assert a.branch == b.branch == branch and a.delta == pytest.approx(b.delta, rel=1e-12)
    assert a.score == pytest.approx(b.score, rel=1e-10)


def test_nuclear_norm_float32_gram_close_to_float64_svd():
    P = _probs(500, 100, 5, 3.0)
    ref = E.nuclear_norm(P, method="svd")
    assert E.nuclear_norm(P.astype(np.float32), method="gram") == pytest.approx(ref, rel=1e-5)
