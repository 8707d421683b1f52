"""The speed rewrites of issue 18 item 6 equal the implementations they replaced (as of d7f250e,
transcribed below as the references) on random cases."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from labelfree.methods import call, softmax
from labelfree.methods import estimators as E


def _old_plogp_rows(P, eps=0.0, normalise=False):
    """estimators.plogp_rows at d7f250e: blocks of 256 rows, temporaries per block."""
    A = np.asarray(P)
    out = np.empty(A.shape[0])
    for s in range(0, A.shape[0], 256):
        p = A[s:s + 256].astype(np.float64)
        if normalise:
            p /= p.sum(axis=1, keepdims=True)
        if eps:
            lg = np.log(p + eps)
        else:
            lg = np.zeros_like(p)
            np.log(p, out=lg, where=p > 0)
        out[s:s + 256] = np.einsum("ij,ij->i", p, lg)
    return out


def _old_mano_softmax_sums(p):
    """estimators.mano_from_probs at d7f250e (criterion 'ce', 4-norm): delta and score."""
    lg_sum = q4_sum = 0.0
    for s in range(0, p.shape[0], 256):
        b = p[s:s + 256].astype(np.float64)
        lg_sum += float(np.log(np.maximum(b, 1e-300)).sum())
        b /= b.sum(axis=1, keepdims=True)
        b *= b
        q4_sum += float(np.einsum("ij,ij->", b, b))
    return -lg_sum / p.size, (q4_sum / p.size) ** 0.25


def _old_nuclear_norm(A):
    """estimators.nuclear_norm at d7f250e ('gram', third-party normalisation)."""
    N, K = A.shape
    G = (A.T @ A if N >= K else A @ A.T).astype(np.float64)
    ev = scipy.linalg.eigvalsh(G, driver="ev")
    return float(np.sqrt(np.clip(ev, 0.0, None)).sum()) / np.sqrt(min(N, K) * N)


def _old_frechet(a, b):
    """estimators.frechet_distance at d7f250e (non-singular path)."""
    def mom(x):
        f = np.array(x, dtype=np.float64)
        mu = f.mean(axis=0)
        f -= mu
        return mu, (f.T @ f) / (len(f) - 1)

    mu_a, s_a = mom(a)
    mu_b, s_b = mom(b)
    w, V = scipy.linalg.eigh(s_a)
    w_b = scipy.linalg.eigvalsh(s_b)
    r = np.sqrt(w)
    lam = scipy.linalg.eigvalsh((V.T @ s_b @ V) * np.outer(r, r))
    d = mu_a - mu_b
    return float(d @ d + w.sum() + w_b.sum() - 2.0 * np.sqrt(np.clip(lam, 0.0, None)).sum())


def _zoo(M=3, N=700, K=300, seed=0, dtype=np.float32):
    r = np.random.default_rng(seed)
    z = r.normal(size=(M, N, K)) * 2.0
    z[:, np.arange(N), r.integers(0, K, N)] += 4.0
    P = softmax(z).astype(dtype)
    P[0, 3] = 0.0  # a one-hot row: 0 ln 0 and the where-masked log
    P[0, 3, 5] = 1.0
    return P


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [dict(normalise=True), dict(eps=1e-20), {}])
def test_plogp_rows_bit_equal_to_old(dtype, kw):
    P = _zoo(dtype=dtype)
    for m in range(len(P)):
        assert np.array_equal(E.plogp_rows(P[m], **kw), _old_plogp_rows(P[m], **kw))


def test_entropy_and_atc_equal_old():
    P, Ps = _zoo(seed=1), _zoo(seed=2)
    ys = Ps.mean(axis=0).argmax(axis=1)
    ys[::3] = 0  # source errors
    ent = call("rank", "Entropy", P)
    assert ent.tolist() == [float(_old_plogp_rows(p, normalise=True).mean()) for p in P]
    for name in ("ATC-SYP", "ATC-NE"):
        got = call("estimate", name, P, source_probs=Ps, source_labels=ys)
        if name == "ATC-NE":
            ref = []
            for m in range(len(P)):
                s = np.sort(_old_plogp_rows(Ps[m], eps=1e-20))
                t = s[np.count_nonzero(Ps[m].argmax(1) != ys) - 1]
                ref.append(float(np.mean(_old_plogp_rows(P[m], eps=1e-20) >= t)))
        else:
            ref = []
            for m in range(len(P)):
                err = 1.0 - float(np.mean(Ps[m].argmax(1) == ys))
                s = np.sort(_old_plogp_rows(Ps[m], normalise=True))
                t = s[min(int(round(err * len(s))), len(s) - 1)]
                ref.append(float(np.mean(_old_plogp_rows(P[m], normalise=True) >= t)))
        assert got.tolist() == ref, name


@pytest.mark.parametrize("K", [300, 1000])  # ln K = 5.7, 6.9: the Jensen bound takes softmax
def test_mano_score_bit_equal_to_old(K):
    P = _zoo(M=2, N=600, K=K, seed=3)
    for p in P:
        delta, score = _old_mano_softmax_sums(p)
        assert delta > 5.0
        assert E.mano_score_from_probs(p) == score
        r = E.mano_from_probs(p)
        assert (r.delta, r.score, r.branch) == (delta, score, "softmax")
    assert call("rank", "MaNo", P).tolist() == [_old_mano_softmax_sums(p)[1] for p in P]


@pytest.mark.parametrize(("scale", "branch"), [(0.5, "taylor"), (6.0, "softmax")])
def test_mano_score_falls_back_below_the_bound(scale, branch):
    # K = 10: ln K = 2.3 < 5, the bound decides nothing; the score is mano_from_probs' own
    p = softmax(np.random.default_rng(4).normal(size=(200, 10)) * scale)
    r = E.mano_from_probs(p)
    assert r.branch == branch and E.mano_score_from_probs(p) == r.score


def test_nuclear_norm_close_to_old():
    # float32 eigenvalues (ssyev) instead of float64: the norm moves by ~4e-8 relative, under the
    # 1e-5 of test_nuclear_norm_float32_gram_close_to_float64_svd; float64 input is unchanged
    for seed in range(3):
        P = _zoo(M=1, N=2000, K=400, seed=seed)[0]
        assert E.nuclear_norm(P) == pytest.approx(_old_nuclear_norm(P), rel=1e-6)
        P64 = P.astype(np.float64)
        assert E.nuclear_norm(P64) == _old_nuclear_norm(P64)


def test_frechet_distance_close_to_old():
    # syevd instead of syevr for S_a's eigenvectors; one-pass centring: rounding only
    r = np.random.default_rng(5)
    for shift in (0.0, 0.3):
        a = r.normal(size=(900, 40)).astype(np.float32)
        b = (r.normal(size=(700, 40)) * (1 + shift) + shift).astype(np.float32)
        assert E.frechet_distance(a, b) == pytest.approx(_old_frechet(a, b), rel=1e-10)
        mu_old = np.array(a, dtype=np.float64).mean(axis=0)
        assert np.array_equal(E.feature_moments(a)[0], mu_old)
