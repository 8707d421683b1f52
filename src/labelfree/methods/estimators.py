"""Label-free accuracy estimators and scores (docs/methods.md, readings R3-R10).

Each function works on one model's arrays (MaNo, nuclear norm, COT, ATC, DoC, Dispersion) or on a
zoo (GDE, ALine, agreement with the ensemble), in float64, with no Python loop over inputs. Returned
estimates are accuracy fractions (reading R1); scores are "higher = better".
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.stats import norm

from labelfree.methods.arrays import MethodInputError, memo
from labelfree.numerics import PLOGP_ROWS, plogp_rows
from labelfree.syp.indicators import FeatureStats
from labelfree.syp.indicators import frechet_distance as syp_fd

# ------------------------------------------------------------------------------ average confidence


def average_confidence(P: np.ndarray) -> np.ndarray:
    """Average max-softmax confidence (Hendrycks & Gimpel 2017) as an accuracy estimate.

    ``P`` (..., N, K) -> (...,) ``mean_i max_k P_ik``; float32 input is reduced in float64.
    """
    return np.asarray(P).max(axis=-1).mean(axis=-1, dtype=np.float64)


# ------------------------------------------------------------------------------ row reductions


_ROWS = 256  # rows per block of MaNo's sums (its block sums fix the rounding of its results)


_U32 = float(np.finfo(np.float32).eps) / 2.0  # float32 unit roundoff


def plogp_rows_screen(P: np.ndarray, eps: float = 0.0,
                      normalise: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """Float32 approximations ``a`` of :func:`plogp_rows` and bounds ``e`` with ``|a - x| <= e``
    row by row (x: the float64 values), for float32 ``P`` with entries in [0, 1]; else None.

    ``B = sum_k p ln(p + eps)`` in float32; with normalisation ``x = B / s - ln s`` (s = the row
    sum; the same number as the sum over q = p / s of q ln q). Every term is <= 0, so ``sum
    |terms| = |B|``: the float32 log (numpy's SIMD log, a few ulp; 8 ulp allowed), the product
    and the sum (gamma_K <= (K + 1) u in any order) put B within (K + 11) u |B| of its value,
    rounding p + eps adds at most u s, and the float32 row sum (within gamma_K s) moves B / s -
    ln s by at most (|B| / s + 1) gamma_K. Hence ``e = 4 (K + 16) u (|B| + s) / s + 1e-9``
    (without normalisation: no division by s): a factor about 2 of slack, and 1e-9 for the
    float64 reference's own rounding (~K 1e-16)."""
    A = np.asarray(P)
    if A.dtype != np.float32 or A.ndim != 2:
        return None
    n, K = A.shape
    B = np.empty(n)
    S = np.empty(n)
    rows = min(PLOGP_ROWS, max(n, 1))
    lgb = np.empty((rows, K), np.float32)
    for s in range(0, n, rows):
        e = min(n, s + rows)
        p, lg = A[s:e], lgb[:e - s]
        if p.size and (p.min() < 0 or p.max() > 1):
            return None
        if eps:
            np.log(np.add(p, np.float32(eps), out=lg), out=lg)
        else:
            np.log(np.maximum(p, np.float32(1e-38), out=lg), out=lg)  # 0 ln 0 = 0 (0 * finite)
        B[s:e] = np.einsum("ij,ij->i", p, lg)
        S[s:e] = p.sum(axis=1)  # float32: within gamma_K of the float64 sum (in the bound)
    if normalise:
        with np.errstate(divide="ignore", invalid="ignore"):
            a, e = B / S - np.log(S), 4.0 * (K + 16) * _U32 * (np.abs(B) + S) / S + 1e-9
    else:
        a, e = B, 4.0 * (K + 16) * _U32 * (np.abs(B) + S) + 1e-9
    if not (np.isfinite(a).all() and np.isfinite(e).all()):
        return None
    return a, e


def kth_and_count(src: np.ndarray, k: int, tgt: np.ndarray, eps: float = 0.0,
                  normalise: bool = False) -> tuple[float, int]:
    """``t = sort(plogp_rows(src))[k]`` and ``#{plogp_rows(tgt) >= t}``, the values the float64
    rows give, from the float32 screen: rows whose bound interval decides their side of t are
    not recomputed; the rest (those near t) get :func:`plogp_rows` itself, row for row the same
    values (tests). Falls back to the float64 rows where the screen does not apply."""
    kw = dict(eps=eps, normalise=normalise)
    sa, ta = plogp_rows_screen(src, **kw), plogp_rows_screen(tgt, **kw)
    if sa is None or ta is None:
        x = plogp_rows(src, **kw)
        t = float(np.sort(x)[k])
        return t, int(np.count_nonzero(plogp_rows(tgt, **kw) >= t))
    a, e = sa
    lo, hi = a - e, a + e
    L, U = np.partition(lo, k)[k], np.partition(hi, k)[k]  # L <= t <= U
    below = hi < L  # x < t strictly
    cand = np.flatnonzero(~below & (lo <= U))  # the rest: x > t strictly
    xc = np.sort(plogp_rows(np.asarray(src)[cand], **kw))
    t = float(xc[k - int(np.count_nonzero(below))])
    a, e = ta
    sure = a - e >= t
    near = np.flatnonzero(~sure & (a + e >= t))
    n_near = int(np.count_nonzero(plogp_rows(np.asarray(tgt)[near], **kw) >= t)) if near.size else 0
    return t, int(np.count_nonzero(sure)) + n_near


# ------------------------------------------------------------------------------------------ MaNo


@dataclass(frozen=True)
class ManoResult:
    """MaNo score S, criterion delta and the branch taken (reading R3)."""

    score: float
    delta: float
    branch: str  # 'softmax' or 'taylor'


def mano(
    logits: np.ndarray,
    *,
    norm_order: float = 4.0,
    threshold: float = 5.0,
    criterion: float | str = "ce",
    row_min: bool = True,
) -> ManoResult:
    """MaNo (Xie et al., NeurIPS 2024), reading R3; Renchunzi-Xie/MaNo@b9c0262 ``algs/mano.py``.

    delta = mean_i [logsumexp(z_i) - mean_k z_ik] (``criterion='ce'``; ``'kl'`` subtracts ln K; a
    float freezes it). delta > threshold -> P = softmax(Z); else P = normalised order-2 Taylor
    ``1 + z + z^2/2`` with the row minimum subtracted. S = (mean_ik P_ik^p)^(1/p).
    """
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 2:
        raise MethodInputError(f"MaNo: logits must be (N, K), got {z.shape}")
    K = z.shape[1]
    zc = z - z.max(axis=1, keepdims=True)
    e = np.exp(zc)
    se = e.sum(axis=1, keepdims=True)
    if isinstance(criterion, str):
        # logsumexp(z) - mean(z) = ln sum exp(z - max) - mean(z - max)
        delta = float(np.mean(np.log(se[:, 0]) - zc.mean(axis=1)))
        if criterion == "kl":
            delta -= np.log(K)
        elif criterion != "ce":
            raise MethodInputError(f"MaNo criterion must be 'ce', 'kl' or a float, got {criterion!r}")
    else:
        delta = float(criterion)
    if delta > threshold:
        P = e / se
        branch = "softmax"
    else:
        V = 1.0 + z + 0.5 * z * z
        if row_min:
            V -= V.min(axis=1, keepdims=True)
        P = V / np.maximum(V.sum(axis=1, keepdims=True), 1e-12)
        branch = "taylor"
    if norm_order == 4.0:
        P *= P
        m = float(np.einsum("ij,ij->", P, P) / P.size)
    else:
        m = float(np.mean(P**norm_order))
    return ManoResult(score=m ** (1.0 / norm_order), delta=delta, branch=branch)


def mano_from_probs(P: np.ndarray, **kw) -> ManoResult:
    """MaNo with only probabilities: equal to ``mano(centred_log_probs(P))`` (the flagged fallback
    of reading R3), computed without the logits when the softmax branch is taken: softmax(ln p - c) =
    p, and delta = mean_i(-mean_k ln p_ik) because logsumexp(ln p_i) = 0. One pass in blocks of
    rows accumulates delta and the 4-norm; the Taylor branch builds the logits."""
    p = np.asarray(P)
    if p.ndim != 2:
        raise MethodInputError(f"MaNo: probs must be (N, K), got {p.shape}")
    if kw.get("criterion", "ce") == "ce" and kw.get("norm_order", 4.0) == 4.0:
        lg_sum, q4_sum, _ = _mano_sums(p, logs=True)
        delta = -lg_sum / p.size
        if delta > kw.get("threshold", 5.0):
            return ManoResult(score=(q4_sum / p.size) ** 0.25, delta=delta, branch="softmax")
    return mano(centred_log_probs(p), **kw)


def mano_score_from_probs(P: np.ndarray, threshold: float = 5.0) -> float:
    """``mano_from_probs(P).score`` (criterion 'ce', 4-norm), without the N K logs of delta when
    a lower bound already takes the softmax branch: by Jensen, with c = max(p, 1e-300) and row sums
    s_i, ``-mean_k ln c_ik >= -ln mean_k c_ik >= ln K - ln(s_i + K 1e-300)``, so delta >= ln K -
    mean_i ln(s_i + K 1e-300) (ln K = 6.9 > 5 for probability rows of K = 1,000). The bound must
    clear the threshold by 1e-9 (delta's rounding); the score is then the same sums as
    ``mano_from_probs`` (bit-equal, tests); otherwise it is ``mano_from_probs`` itself."""
    p = np.asarray(P)
    if p.ndim != 2:
        raise MethodInputError(f"MaNo: probs must be (N, K), got {p.shape}")
    _, q4_sum, bound = _mano_sums(p, logs=False)
    if bound > threshold + 1e-9 * (1.0 + abs(threshold)):
        return (q4_sum / p.size) ** 0.25
    return mano_from_probs(p, threshold=threshold).score


def _mano_sums(p: np.ndarray, logs: bool) -> tuple[float, float, float]:
    """Blocks of ``_ROWS`` rows in one float64 buffer: sum of ln max(p, 1e-300) (``logs``, else
    NaN), sum of (p / row sum)^4, and Jensen's lower bound on delta (see mano_score_from_probs)."""
    n, K = p.shape
    rows = min(_ROWS, max(n, 1))
    buf = np.empty((rows, K))
    lgb = np.empty((rows, K)) if logs else None
    lg_sum = q4_sum = ls_sum = 0.0
    neg = False
    for s in range(0, n, rows):
        e = min(n, s + rows)
        b = buf[:e - s]
        np.copyto(b, p[s:e], casting="unsafe")  # = astype(float64)
        if lgb is not None:
            lg = lgb[:e - s]
            np.maximum(b, 1e-300, out=lg)
            np.log(lg, out=lg)
            lg_sum += float(lg.sum())
        else:
            neg = neg or bool(b.min() < 0)  # the bound needs p >= 0
        rs = b.sum(axis=1, keepdims=True)
        ls_sum += float(np.log(rs + K * 1e-300).sum())
        b /= rs
        b *= b
        q4_sum += float(np.einsum("ij,ij->", b, b))
    bound = -np.inf if neg else float(np.log(K) - ls_sum / max(n, 1))
    return (lg_sum if logs else float("nan")), q4_sum, bound


def centred_log_probs(P: np.ndarray) -> np.ndarray:
    """Row-centred ``ln max(p, 1e-300)``: MaNo's flagged fallback when only probabilities exist."""
    z = np.log(np.maximum(np.asarray(P, dtype=np.float64), 1e-300))
    z -= z.mean(axis=1, keepdims=True)
    return z


# ---------------------------------------------------------------------------------- nuclear norm


def nuclear_norm(P: np.ndarray, *, normalise: str = "third_party", method: str = "auto") -> float:
    """Nuclear norm of the softmax matrix (Deng et al., ICML 2023), reading R4. UNVERIFIED DEFINITION.

    No authors' code is public: the normalisation ``||P||_* / sqrt(min(N, K) * N)`` is the
    third-party normalisation of reading R4 (``normalise='none'``: the raw nuclear norm). ``method='svd'``
    sums the singular values (float64); ``'gram'`` sums sqrt of the eigenvalues of the smaller
    Gram matrix (agrees with svd to ~1e-6 relative, much faster); ``'auto'`` = gram when
    min(N, K) > 64.
    """
    A = np.asarray(P)
    if A.ndim != 2:
        raise MethodInputError(f"nuclear norm: probs must be (N, K), got {A.shape}")
    if A.dtype != np.float32:
        A = A.astype(np.float64)
    N, K = A.shape
    if method == "auto":
        method = "gram" if min(N, K) > 64 else "svd"
    if method == "svd":
        nuc = float(np.linalg.svd(A.astype(np.float64), compute_uv=False).sum())
    elif method == "gram":
        # Gram and its eigenvalues (LAPACK syev) in the input's precision: float32 input gives a
        # float32 SYRK and ssyev (on a 1000 x 1000 softmax Gram: ssyev 0.07 s, dsyev 0.10 s, syevd
        # 0.11 s, syevr 7 s, numpy eigvalsh 11 s); the float32 eigenvalues move the norm by ~4e-8
        # relative, under the float32 Gram's own ~2e-7 from the float64 svd (tests)
        G = A.T @ A if N >= K else A @ A.T
        ev = scipy.linalg.eigvalsh(G, driver="ev").astype(np.float64)
        nuc = float(np.sqrt(np.clip(ev, 0.0, None)).sum())
    else:
        raise MethodInputError(f"nuclear norm method must be 'auto', 'svd' or 'gram', got {method!r}")
    if normalise == "third_party":
        return nuc / np.sqrt(min(N, K) * N)
    if normalise == "none":
        return nuc
    raise MethodInputError(f"nuclear norm normalise must be 'third_party' or 'none', got {normalise!r}")


# ------------------------------------------------------------------------------ Frechet distance


def feature_moments(feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean (D,) and unbiased covariance (D, D) of (N, D) features, rows = samples: the values of
    ``syp.indicators.feature_stats`` (``np.cov``) by one product ``Fc.T @ Fc`` of the centred
    float64 features."""
    x = np.asarray(feats)
    if x.ndim != 2 or len(x) < 2:
        raise MethodInputError(f"FD: need (N>=2, D) features, got shape {x.shape}")
    mu = x.mean(axis=0, dtype=np.float64)
    f = np.subtract(x, mu, dtype=np.float64)  # centred float64 copy in one pass
    return mu, (f.T @ f) / (len(f) - 1)  # f.T @ f: numpy calls BLAS syrk


def frechet_distance(feats_a: np.ndarray, feats_b: np.ndarray) -> float:
    """Squared Frechet distance of two feature sets (Deng & Zheng, CVPR 2021; SYP's FD indicator, docs/syp.md):
    ``||mu_a - mu_b||^2 + Tr(S_a) + Tr(S_b) - 2 Tr((S_a S_b)^{1/2})``.

    ``Tr((S_a S_b)^{1/2})`` is the sum of the square roots of the eigenvalues of ``S_a S_b``, which
    are those of the symmetric ``C = S_a^{1/2} S_b S_a^{1/2}`` (similar matrices): one ``eigh`` of
    S_a and one ``eigvalsh`` of C instead of ``scipy.linalg.sqrtm`` of the product. When either
    covariance is singular (smallest eigenvalue <= 1e-10 x largest) the value is
    ``syp.indicators.frechet_distance`` itself (sqrtm with its eps retry), so results equal it.
    """
    mu_a, s_a = feature_moments(feats_a)
    mu_b, s_b = feature_moments(feats_b)
    if mu_a.shape != mu_b.shape:
        raise MethodInputError(f"FD: feature dims differ {mu_a.shape} vs {mu_b.shape}")
    w, V = scipy.linalg.eigh(s_a, driver="evd")  # divide and conquer: 1.5x evr's speed at D=256
    w_b = scipy.linalg.eigvalsh(s_b)
    if w[0] <= 1e-10 * w[-1] or w_b[0] <= 1e-10 * w_b[-1]:
        return syp_fd(FeatureStats(mu_a, s_a), FeatureStats(mu_b, s_b))
    r = np.sqrt(w)
    C = (V.T @ s_b @ V) * np.outer(r, r)  # S_a^{1/2} S_b S_a^{1/2} in the eigenbasis of S_a
    lam = scipy.linalg.eigvalsh(C)
    diff = mu_a - mu_b
    tr_sqrt = float(np.sqrt(np.clip(lam, 0.0, None)).sum())
    return float(diff @ diff + w.sum() + w_b.sum() - 2.0 * tr_sqrt)


# ------------------------------------------------------------------------------------ ATC and DoC


def atc_scores(P: np.ndarray, score: str = "MC") -> np.ndarray:
    """ATC score functions (reading R6): MC = max prob; NE = sum_k p ln(p + 1e-20)."""
    if score == "MC":
        return np.asarray(P).max(axis=1).astype(np.float64)
    if score == "NE":
        return plogp_rows(P, eps=1e-20)
    raise MethodInputError(f"ATC score must be 'MC' or 'NE', got {score!r}")


def atc_threshold(src_scores: np.ndarray, correct: np.ndarray, rule: str = "code") -> float:
    """ATC threshold (reading R6, ``ATC_helper.py::find_ATC_threshold``).

    ``rule='code'``: ``sort(s)[n_inc - 1]`` (0.0 with a warning when no source error);
    ``'exact'``: ``sort(s)[n_inc]`` (+inf when every source sample is wrong).
    """
    s = np.sort(np.asarray(src_scores, dtype=np.float64))
    n_inc = int(np.size(correct) - np.count_nonzero(correct))
    if rule == "code":
        if n_inc == 0:
            warnings.warn("ATC: source accuracy is 1, threshold stays 0.0 (docs/methods.md, reading R6)", stacklevel=2)
            return 0.0
        return float(s[n_inc - 1])
    if rule == "exact":
        return float(s[n_inc]) if n_inc < len(s) else float("inf")
    raise MethodInputError(f"ATC threshold_rule must be 'code' or 'exact', got {rule!r}")


def atc(
    P: np.ndarray, P_src: np.ndarray, y_src: np.ndarray, *, score: str = "MC",
    threshold_rule: str = "code",
) -> float:
    """ATC (Garg et al., ICLR 2022) accuracy estimate, reading R6: ``mean(s_target >= t)``.

    NE on float32 probabilities: threshold and count by :func:`kth_and_count` (same values)."""
    if score == "NE" and threshold_rule in ("code", "exact"):
        n = len(P_src)
        n_inc = int(n - np.count_nonzero(np.asarray(P_src).argmax(axis=1) == y_src))
        k = n_inc - 1 if threshold_rule == "code" else n_inc
        if 0 <= k < n and np.ndim(P) == 2 and len(P):
            return kth_and_count(P_src, k, P, eps=1e-20)[1] / len(P)
    t = atc_threshold(atc_scores(P_src, score), np.asarray(P_src).argmax(axis=1) == y_src,
                      threshold_rule)
    return float(np.mean(atc_scores(P, score) >= t))


def doc(P: np.ndarray, P_src: np.ndarray, y_src: np.ndarray) -> float:
    """DoC (Guillory et al., ICCV 2021), reading R7: ``acc_src + mean max P - mean max P_src``."""
    acc_src = float(np.mean(np.asarray(P_src).argmax(axis=1) == y_src))
    return acc_src + float(average_confidence(P)) - float(average_confidence(P_src))


# ------------------------------------------------------------------------------------------- GDE


def agreement_matrix(preds: np.ndarray) -> np.ndarray:
    """Pairwise agreement ``mean_i [yhat_a,i == yhat_b,i]`` of (M, N) predictions -> (M, M),
    computed once per predictions array (``arrays.memo``: GDE and ALine read the same matrix of
    a set, ALine the source set's once per zoo); read-only."""
    def f() -> np.ndarray:
        Y = np.asarray(preds)
        M = Y.shape[0]
        out = np.ones((M, M))
        for a in range(M):
            out[a, a + 1:] = (Y[a + 1:] == Y[a]).mean(axis=1)
            out[a + 1:, a] = out[a, a + 1:]
        out.flags.writeable = False
        return out

    return memo(preds, "agreement_matrix", f)


def gde(preds: np.ndarray, partner: str | dict[int, int] = "mean_others") -> np.ndarray:
    """GDE (Jiang et al., ICLR 2022), reading R8: accuracy = 1 - disagreement with a partner.

    ``preds`` (M, N). ``partner``: 'mean_others' (mean over every other model), 'next'
    ((m + 1) mod M) or a map {m: partner}.
    """
    Y = np.asarray(preds)
    M = Y.shape[0]
    if M < 2:
        raise MethodInputError("GDE needs at least 2 models")
    agree = agreement_matrix(Y)
    if partner == "mean_others":
        dis = (1.0 - agree).sum(axis=1) / (M - 1)
    elif partner == "next":
        dis = 1.0 - agree[np.arange(M), (np.arange(M) + 1) % M]
    elif isinstance(partner, dict):
        dis = np.array([1.0 - agree[m, partner[m]] for m in range(M)])
    else:
        raise MethodInputError(f"GDE partner must be 'mean_others', 'next' or a dict, got {partner!r}")
    return 1.0 - dis


# ------------------------------------------------------------------------- agreement-on-the-line


@dataclass(frozen=True)
class AlineResult:
    """ALine outputs for one target set (reading R9)."""

    aline_s: np.ndarray  # (M,) accuracy
    aline_s_probit: np.ndarray  # (M,) raw code output (probit scale)
    aline_d: np.ndarray  # (M,) accuracy
    slope: float
    bias: float
    r2: float
    n_pairs_used: int
    kept: np.ndarray  # (n_pairs, 2) model pairs kept


def aline(
    preds_src: np.ndarray, acc_src: np.ndarray, preds_tgt: np.ndarray,
    lo: float = 0.05, hi: float = 0.98,
) -> AlineResult:
    """ALine-S and ALine-D (Baek et al., NeurIPS 2022), reading R9;
    kebaek/Agreement-on-the-line@99cb46e ``agreement_trajectory.ipynb::aline``.

    Pairs i < j with ID and OOD agreement in [lo, hi]; OLS of probit(OOD agr.) on probit(ID agr.);
    ALine-S = Phi(slope * probit(acc_src) + bias); ALine-D = Phi(min-norm lstsq of the pair system).
    """
    Ys, Yt = np.asarray(preds_src), np.asarray(preds_tgt)
    M = Ys.shape[0]
    a = norm.ppf(np.asarray(acc_src, dtype=np.float64))
    g_all, h_all = agreement_matrix(Ys), agreement_matrix(Yt)
    iu, ju = np.triu_indices(M, k=1)
    g, h = g_all[iu, ju], h_all[iu, ju]
    keep = (g <= hi) & (g >= lo) & (h <= hi) & (h >= lo)
    iu, ju, g, h = iu[keep], ju[keep], g[keep], h[keep]
    nan = np.full(M, np.nan)
    if np.unique(g).size < 2:
        warnings.warn("ALine: fewer than 2 distinct ID agreements among kept pairs; NaN",
                      stacklevel=2)
        return AlineResult(nan, nan.copy(), nan.copy(), np.nan, np.nan, np.nan, int(keep.sum()),
                           np.stack([iu, ju], axis=1))
    x, y = norm.ppf(g), norm.ppf(h)
    X = np.stack([np.ones_like(x), x], axis=1)
    (bias, slope), *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ np.array([bias, slope])
    sst = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid**2).sum()) / sst if sst > 0 else np.nan
    pred_s = slope * a + bias
    A = np.zeros((len(iu), M))
    A[np.arange(len(iu)), iu] += 0.5
    A[np.arange(len(iu)), ju] += 0.5
    abar = 0.5 * a[iu] + 0.5 * a[ju]
    b = y + slope * (abar - x)
    w = np.linalg.lstsq(A, b, rcond=None)[0]
    return AlineResult(norm.cdf(pred_s), pred_s, norm.cdf(w), float(slope), float(bias), r2,
                       len(iu), np.stack([iu, ju], axis=1))


# ------------------------------------------------------------------------------------ Dispersion


def dispersion(feats: np.ndarray, preds: np.ndarray, num_classes: int | None = None) -> float:
    """Dispersion score (Xie et al., 2023), reading R10; Renchunzi-Xie/Dispersion@ef5e00f
    ``common/distance.py::dispersion``: ``ln(sum_k n_k ||mu_k - mu||^2 / (C - 1))``.

    C = number of distinct predicted classes [code]; ``num_classes=K`` divides by K - 1 instead
    (the paper's reading, if its k is K; docs/methods.md, reading R10).
    """
    X = np.asarray(feats, dtype=np.float64)
    y = np.asarray(preds)
    if X.ndim != 2 or len(X) != len(y):
        raise MethodInputError(f"Dispersion: feats {X.shape} and preds {y.shape} do not match")
    classes, inv, counts = np.unique(y, return_inverse=True, return_counts=True)
    C, N = len(classes), len(y)
    if not 1 < C < N:
        raise MethodInputError(f"Dispersion: need 1 < predicted classes < N, got C={C}, N={N}")
    mu = X.mean(axis=0)
    sums = np.zeros((C, X.shape[1]))
    _segment_sum(X, inv, C, sums)
    mu_k = sums / counts[:, None]
    between = float((counts * ((mu_k - mu) ** 2).sum(axis=1)).sum())
    div = C - 1 if num_classes is None else num_classes - 1
    with np.errstate(divide="ignore"):
        return float(np.log(between / div))


def _segment_sum(X: np.ndarray, inv: np.ndarray, C: int, out: np.ndarray) -> None:
    """Row sums of X per group ``inv`` (one sorted pass, no per-row Python loop)."""
    order = np.argsort(inv, kind="stable")
    starts = np.searchsorted(inv[order], np.arange(C))
    out[:] = np.add.reduceat(X[order], starts, axis=0)


# --------------------------------------------------------------------- agreement with the ensemble


def ensemble_agreement(P: np.ndarray) -> np.ndarray:
    """Agreement of each model's argmax with the argmax of the zoo's mean probabilities: (M,).

    A label-free ranking score used as a baseline.
    """
    P = np.asarray(P)
    mean = P.mean(axis=0, dtype=np.float64)
    ens = mean.argmax(axis=1)
    return (P.argmax(axis=2) == ens[None, :]).mean(axis=1)
