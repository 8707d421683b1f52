"""The methods' speed rewrites equal the implementations they replaced (as of d7f250e,
transcribed below as the references) on random cases."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from labelfree.methods import estimators as E
from labelfree.methods import fewlabel as F
from labelfree.methods.registry import call
from labelfree.numerics import plogp_rows, softmax


def _old_plogp_rows(P, eps=0.0, normalise=False):
    """The per-row definition ``plogp_rows`` keeps bit for bit: the whole array at once, the
    masked log, numpy's sum along each row (the former ``numerics.entropy``, negated)."""
    p = np.asarray(P).astype(np.float64)
    if normalise:
        p = p / p.sum(axis=1, keepdims=True)
    if eps:
        lg = np.log(p + eps)
    else:
        lg = np.zeros_like(p)
        np.log(p, out=lg, where=p > 0)
    return (p * lg).sum(axis=1)


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
        assert np.array_equal(plogp_rows(P[m], **kw), _old_plogp_rows(P[m], **kw))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numerics_entropy_is_the_negated_plogp_rows(dtype):
    """One implementation: numerics.entropy equals the former whole-array form bit for bit
    (a one-hot row gives +0.0) and scipy.stats.entropy to rounding."""
    from scipy.stats import entropy as scipy_entropy

    from labelfree.numerics import entropy

    P = _zoo(dtype=dtype)
    for p in P:
        h = entropy(p)
        assert np.array_equal(h, -_old_plogp_rows(p, normalise=True))
        assert not np.signbit(h).any()
        np.testing.assert_allclose(h, scipy_entropy(p.astype(np.float64), axis=1), rtol=1e-12)


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


def _old_model_picker(
    preds: np.ndarray, labels: np.ndarray, budgets: list[int], tuning_par: np.ndarray | float,
    seed: int, n_runs: int = 1, stop_at_budget: bool = True,
) -> F.ModelPickerResult:
    """fewlabel.model_picker at d7f250e (same arithmetic; fancy-indexed query updates)."""
    Y = np.asarray(preds)
    M, N = Y.shape
    y = np.asarray(labels)
    rng = np.random.default_rng(seed)
    R = n_runs
    tp = np.broadcast_to(np.asarray(tuning_par, dtype=np.float64), (R,)).copy()
    budgets = sorted(int(b) for b in budgets)
    bmax = budgets[-1]
    perm = np.argsort(rng.random((R, N)), axis=1)
    eta0 = np.sqrt(np.log(M) / 2.0)
    # models x runs layout: reductions over models run across the R runs at once
    LT = np.zeros((M, R))  # importance-weighted losses L
    Ld = np.zeros((M, R))  # L - min over models (changes only when a run queries)
    nq = np.zeros(R, dtype=np.int64)
    nb = len(budgets)
    best = np.full((R, nb), -1, dtype=np.int64)
    scores = np.zeros((R, nb, M))
    used = np.zeros((R, nb), dtype=np.int64)
    barr = np.asarray(budgets)
    yt = np.ascontiguousarray(Y.T)  # (N, M)
    wrong = y[:, None] != yt  # (N, M) -- read only at queried instances
    cidT = np.ascontiguousarray(F._class_ids(yt).T)  # (M, N): first model predicting the same class
    disagree = (yt != yt[:, :1]).any(axis=1)  # (N,) the models disagree on the instance
    cols = np.arange(R)
    permT = np.ascontiguousarray(perm.T)  # (N, R): instance of step t in every run
    for t in range(1, N + 1):
        x = permT[t - 1]
        eta = eta0 / np.sqrt(t)
        w = np.exp(-eta * Ld)
        w /= w.sum(axis=0)
        # weight of the class predicted by model m: posterior mass of the models predicting it
        idx = cidT[:, x] * R + cols  # (M, R) bins (class id, run)
        W = np.bincount(idx.ravel(), weights=w.ravel(), minlength=M * R)[idx]
        u = tp * (W * (1.0 - W)).max(axis=0)
        # u > 1 -> 1 and non-finite -> 0; on disagreement instances u > 0 is floored at eta_t
        # and capped at 1 (spec 9 steps 3-4), i.e. min(max(u, eta_t), 1); else 0
        u = np.where(disagree[x] & np.isfinite(u) & (u > 0), np.minimum(np.maximum(u, eta), 1.0), 0.0)
        z = rng.random(R) < u  # u = 0 off disagreement: never queried
        if z.any():
            LT[:, z] += wrong[x[z]].T / u[z]
            Ld[:, z] = LT[:, z] - LT[:, z].min(axis=0)
            nq[z] += 1
            hit = z[:, None] & (nq[:, None] == barr[None, :])
            if hit.any():
                r_i, b_i = np.nonzero(hit)
                Lr = LT[:, r_i].T
                best[r_i, b_i] = F._argmin_random(Lr, rng)
                scores[r_i, b_i] = -Lr
                used[r_i, b_i] = barr[b_i]
        if stop_at_budget and (nq >= bmax).all():
            break
    L = LT.T
    final = F._argmin_random(L, rng)
    miss = best < 0
    if miss.any():
        r_i, b_i = np.nonzero(miss)
        best[r_i, b_i] = final[r_i]
        scores[r_i, b_i] = -L[r_i]
        used[r_i, b_i] = nq[r_i]
    return F.ModelPickerResult(best, scores, used, final, nq)


@pytest.mark.parametrize("stop", [True, False])
def test_model_picker_bit_equal_to_old(stop):
    # bins gathered per 64 steps, max over (class, run) bins, every run updated at once
    r = np.random.default_rng(21)
    M, N, K = 9, 500, 12
    y = r.integers(0, K, N)
    Y = np.where(r.random((M, N)) < np.linspace(0.4, 0.9, M)[:, None], y, r.integers(0, K, (M, N)))
    Y[:, :40] = Y[0, :40]  # instances where every model agrees (never queried)
    tp = np.repeat(np.logspace(-12, np.log2(1e4), 10, base=2), 3)
    a = F.model_picker(Y, y, [3, 10, 40], tp, 5, len(tp), stop_at_budget=stop)
    b = _old_model_picker(Y, y, [3, 10, 40], tp, 5, len(tp), stop_at_budget=stop)
    for f in ("best", "scores", "used", "final_best", "queries"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f


def test_plogp_rows_row_subsets_equal_the_full_rows():
    # kth_and_count recomputes only some rows: each row's value must not depend on its block
    P = _zoo(M=1, N=300, K=257, seed=9)[0]
    for kw in (dict(normalise=True), dict(eps=1e-20)):
        full = plogp_rows(P, **kw)
        for idx in ([7], [0, 3], np.arange(5, 200, 3), np.arange(300)[::-1]):
            assert np.array_equal(plogp_rows(P[idx], **kw), full[idx])


@pytest.mark.parametrize("kw", [dict(normalise=True), dict(eps=1e-20)])
def test_float32_screen_bound_holds(kw):
    P = _zoo(M=2, N=2000, K=1000, seed=10)
    for p in P:
        a, e = E.plogp_rows_screen(p, **kw)
        err = np.abs(a - plogp_rows(p, **kw))
        assert np.all(err <= e) and err.max() < 0.05 * e.min()  # the bound has room to spare
    assert E.plogp_rows_screen(P[0].astype(np.float64), **kw) is None
    assert E.plogp_rows_screen(P[0] * 2, **kw) is None  # entries above 1: no screen


@pytest.mark.parametrize("kw", [dict(normalise=True), dict(eps=1e-20)])
def test_kth_and_count_equals_the_float64_rows(kw):
    # ties at the threshold: the target repeats source rows (equal values), the source repeats
    # the row at the threshold; every k from first to last
    P = _zoo(M=2, N=400, K=50, seed=11)
    src, tgt = P[0].copy(), P[1].copy()
    xs = plogp_rows(src, **kw)
    order = np.argsort(xs)
    src[order[200:205]] = src[order[199]]
    tgt[:50] = src[order[150:200]]
    xs, xt = plogp_rows(src, **kw), plogp_rows(tgt, **kw)
    for k in (0, 1, 150, 199, 200, 203, 204, 205, 399):
        t = np.sort(xs)[k]
        assert E.kth_and_count(src, k, tgt, **kw) == (t, int(np.count_nonzero(xt >= t)))
        got64 = E.kth_and_count(src.astype(np.float64), k, tgt.astype(np.float64), **kw)
        assert got64[1] == int(np.count_nonzero(plogp_rows(tgt.astype(np.float64), **kw) >= got64[0]))


# ------------------------------------------------ work shared per stack (arrays.memo)


def _old_agreement_matrix(Y):
    """estimators.agreement_matrix before the memo: the pairwise loop, recomputed per call."""
    M = Y.shape[0]
    out = np.ones((M, M))
    for a in range(M):
        out[a, a + 1:] = (Y[a + 1:] == Y[a]).mean(axis=1)
        out[a + 1:, a] = out[a, a + 1:]
    return out


def _memo_zoo(seed, M=5, N=300, K=6):
    r = np.random.default_rng(seed)
    y = r.integers(0, K, N)
    logit = r.normal(size=(M, N, K)) + (1.0 + 0.4 * np.arange(M))[:, None, None] * np.eye(K)[y]
    return softmax(logit), y


def test_cot_cott_through_the_registry_equal_per_model_calls():
    # COT and COTT share the target transports and COTT's source thresholds are computed once per
    # source stack: bit-equal to cot.cot / cot.cott per model (the registry's calls before), for
    # several target sets against one source, in either order of the two methods, and for
    # other source labels on the same stacks (a memo keyed without the labels would fail)
    from labelfree.methods import cot as C

    Ps, ys = _memo_zoo(0)
    targets = [_memo_zoo(s)[0] for s in (1, 2)]
    ys2 = np.roll(ys, 7)
    for labels in (ys, ys2):
        for i, P in enumerate(targets):
            order = ("COT", "COTT") if i == 0 else ("COTT", "COT")
            got = {name: call("estimate", name, P, source_probs=Ps, source_labels=labels)
                   for name in order}
            want_cot = [C.cot(P[m], labels).accuracy for m in range(len(P))]
            want_cott = [C.cott(P[m], Ps[m], labels).accuracy for m in range(len(P))]
            np.testing.assert_array_equal(got["COT"], want_cot)
            np.testing.assert_array_equal(got["COTT"], want_cott)


def test_memo_per_array_object_and_dropped_with_it():
    import gc

    from labelfree.methods import arrays as A

    P, _ = _memo_zoo(3)
    Y = A.predictions(P)
    assert A.predictions(P) is Y and not Y.flags.writeable
    np.testing.assert_array_equal(Y, P.argmax(axis=2))
    Q = P.copy()  # another object with the same values: its own entry
    assert A.predictions(Q) is not Y
    calls = []
    assert A.memo(Q, "k", lambda: calls.append(1) or 5) == 5
    assert A.memo(Q, "k", lambda: calls.append(1) or 6) == 5 and calls == [1]
    i = id(Q)
    del Q
    gc.collect()
    assert i not in A._MEMO


def test_gde_aline_with_shared_agreement_equal_old():
    Ps, ys = _memo_zoo(4, M=6)
    P, _ = _memo_zoo(5, M=6)
    Y, Ys = P.argmax(2), Ps.argmax(2)
    got_gde = call("estimate", "GDE", P)
    np.testing.assert_array_equal(got_gde, 1.0 - (1.0 - _old_agreement_matrix(Y)).sum(axis=1) / 5)
    for name in ("ALine-S", "ALine-D"):
        got = call("estimate", name, P, source_probs=Ps, source_labels=ys)
        # the same ALine with agreement matrices recomputed from fresh prediction arrays
        r = E.aline(Ys.copy(), (Ys == ys[None]).mean(axis=1), Y.copy())
        np.testing.assert_array_equal(got, r.aline_s if name == "ALine-S" else r.aline_d)
    np.testing.assert_array_equal(E.agreement_matrix(Y.copy()), _old_agreement_matrix(Y))
