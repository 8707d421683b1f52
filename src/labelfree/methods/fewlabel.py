"""Few-label methods: Active Testing, ModelPicker, CODA, and the random baseline
(docs/methods.md, readings R11-R13, and R2 for their scores).

Labels are read only through the indices a method queries (``labels[idx]``). Every method takes an
explicit ``seed``; repeated runs are vectorised over seeds where the algorithm allows it, with one
``numpy.random.Generator`` per call (the authors' legacy global-RNG streams are not reproduced; the
runs have the same distribution).
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array
from scipy.special import betaln
from threadpoolctl import threadpool_limits

from labelfree.methods.arrays import MethodInputError

# ------------------------------------------------------------------------------ Active Testing


@dataclass(frozen=True)
class ActiveTestingResult:
    """Per seed s and step j (1-based budget j + 1): acquired index, its pmf value q, and the
    LURE accuracy estimate after that many labels (reading R13)."""

    indices: np.ndarray  # (S, b) pool indices in acquisition order
    q: np.ndarray  # (S, b)
    accuracy: np.ndarray  # (S, b) 1 - R_LURE after 1..b labels
    biased: np.ndarray  # (S, b) plain mean accuracy of the acquired labels


def lure_risk(losses: np.ndarray, q: np.ndarray, N: int) -> np.ndarray:
    """R_LURE after every prefix M = 1..b (reading R13): (..., b) losses and pmf values -> (..., b).

    ``v_j = 1 + (N - M)/(N - j) * (1/((N - j + 1) q_j) - 1)`` (v = 1 when M = N),
    ``R = (1/M) sum_j v_j L_j``; computed for all M at once with cumulative sums.
    """
    L = np.asarray(losses, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    b = L.shape[-1]
    j = np.arange(1, b + 1, dtype=np.float64)
    M = j
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(j < N, (1.0 / ((N - j + 1) * q) - 1.0) / (N - j), 0.0) * L
    R = (np.cumsum(L, axis=-1) + (N - M) * np.cumsum(term, axis=-1)) / M
    return R


def active_testing(
    P: np.ndarray, labels: np.ndarray, budget: int, seed: int, n_seeds: int = 1,
    surrogate: np.ndarray | None = None,
) -> ActiveTestingResult:
    """Active Testing (Kossen et al., ICML 2021), accuracy loss, reading R13;
    jlko/active-testing@82512ac ``acquisition.py::ClassifierAcquisitionAccuracy``,
    ``risk_estimators.py::FancyUnbiasedRiskEstimator``.

    ``P`` (N, K) model under test; ``surrogate`` Q (N, K), default P. Acquisition
    ``a_i = 1 - Q[i, argmax P_i]``, floored at ``0.05 max_j a_j`` over the remaining points, drawn
    in proportion (all zero: uniform, with a warning). ``n_seeds`` independent runs, one Generator.
    """
    P = np.asarray(P, dtype=np.float64)
    N = P.shape[0]
    if not 1 <= budget <= N:
        raise MethodInputError(f"Active Testing: budget {budget} not in 1..{N}")
    Q = P if surrogate is None else np.asarray(surrogate, dtype=np.float64)
    pred = P.argmax(axis=1)
    a = 1.0 - Q[np.arange(N), pred]
    correct = pred == np.asarray(labels)
    rng = np.random.default_rng(seed)
    S = n_seeds
    remaining = np.ones((S, N), dtype=bool)
    idx = np.zeros((S, budget), dtype=np.int64)
    qs = np.zeros((S, budget))
    rows = np.arange(S)
    warned = False
    for m in range(budget):
        a_rem = np.where(remaining, a, -np.inf)
        floor = 0.05 * a_rem.max(axis=1, keepdims=True)
        s = np.where(remaining, np.maximum(a, floor), 0.0)
        tot = s.sum(axis=1, keepdims=True)
        zero = tot[:, 0] <= 0
        if zero.any():
            if not warned:
                warnings.warn("Active Testing: all acquisition scores are 0; uniform fallback "
                              "(docs/methods.md, reading R13)", stacklevel=2)
                warned = True
            s[zero] = remaining[zero]
            tot = s.sum(axis=1, keepdims=True)
        pmf = s / tot
        cum = np.cumsum(pmf, axis=1)
        u = rng.random(S)[:, None] * cum[:, -1:]
        pick = np.minimum((cum <= u).sum(axis=1), N - 1)
        bad = ~remaining[rows, pick]  # rounding at the top end: take the last remaining point
        if bad.any():
            pick[bad] = N - 1 - np.argmax(remaining[bad][:, ::-1], axis=1)
        idx[:, m] = pick
        qs[:, m] = pmf[rows, pick]
        remaining[rows, pick] = False
    L = (~correct[idx]).astype(np.float64)
    acc = 1.0 - lure_risk(L, qs, N)
    biased = 1.0 - np.cumsum(L, axis=1) / np.arange(1, budget + 1)
    return ActiveTestingResult(idx, qs, acc, biased)


# ------------------------------------------------------------------------------ ModelPicker


@dataclass(frozen=True)
class ModelPickerResult:
    """Per run: the model returned at each budget, its -L ranking scores, labels used (reading R11)."""

    best: np.ndarray  # (R, n_budgets) model index at each budget ('at_budget')
    scores: np.ndarray  # (R, n_budgets, M) -L at the moment the budget was reached
    used: np.ndarray  # (R, n_budgets) labels actually used (< b if the stream ran out)
    final_best: np.ndarray  # (R,) argmin L after the whole stream (authors' evaluation reading)
    queries: np.ndarray  # (R,) total queries over the whole stream


def _argmin_random(L: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmin with ties broken uniformly at random."""
    tie = L.min(axis=1, keepdims=True) >= L
    key = np.where(tie, rng.random(L.shape), -1.0)
    return key.argmax(axis=1)


def _class_ids(YT: np.ndarray, block: int = 4096) -> np.ndarray:
    """(N, M) predictions -> (N, M) index of the first model predicting the same class."""
    out = np.empty(YT.shape, dtype=np.int64)
    for s in range(0, len(YT), block):
        b = YT[s:s + block]
        out[s:s + block] = (b[:, :, None] == b[:, None, :]).argmax(axis=2)
    return out


def model_picker(
    preds: np.ndarray, labels: np.ndarray, budgets: list[int], tuning_par: np.ndarray | float,
    seed: int, n_runs: int = 1, stop_at_budget: bool = True,
) -> ModelPickerResult:
    """ModelPicker (Karimi et al., AISTATS 2021), reading R11; DS3Lab/online-active-model-selection
    @b56c738 ``src/methods/model_picker.py::model_picker``, ``_compute_u_t``.

    ``preds`` (M, N) argmax predictions; the stream is a random permutation of the pool per run.
    Posterior ``w = exp(-eta_t (L - min L))``, eta_t = sqrt(ln M / 2)/sqrt(t);
    ``u = tuning_par * max_c s_c (1 - s_c)``, floored at eta_t on disagreement instances, capped at
    1; a query adds ``1[yhat != y] / u`` to L. ``returned='at_budget'`` (reading R11): argmin L
    right after the b-th query (ties at random). ``tuning_par`` may be one value per run.
    ``stop_at_budget`` ends the stream once every run has reached max(budgets) (then final_best and
    queries describe the truncated stream).

    Longer than 80 lines on purpose: the stream loop is one sequential step per instance over a
    dozen (models x runs) and (instances x runs) arrays prepared above it, so that each step is a
    few in-place numpy calls; cut into functions, each step would pass them all.
    """
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
    cidT = np.ascontiguousarray(_class_ids(yt).T)  # (M, N): first model predicting the same class
    disagree = (yt != yt[:, :1]).any(axis=1)  # (N,) the models disagree on the instance
    cols = np.arange(R)
    permT = np.ascontiguousarray(perm.T)  # (N, R): instance of step t in every run
    cidN = np.ascontiguousarray(cidT.T) * R  # (N, M): bincount bin of (class id, run 0)
    wrongT = wrong.astype(np.float64)  # (N, M) 0/1 losses
    dis_run = disagree[permT]  # (N, R): step t's instance is a disagreement one, per run
    etas = eta0 / np.sqrt(np.arange(1, N + 1))
    w = np.empty((M, R))
    G = np.empty((M, R))
    blk = 64  # steps whose (M, R) bins are gathered at once
    for t in range(1, N + 1):
        j = (t - 1) % blk
        if j == 0:  # bins (class id of model m on the run's instance, run) for the next steps
            bins = np.add(cidN[permT[t - 1:t - 1 + blk]].transpose(0, 2, 1), cols,
                          order="C")  # (blk, M, R)
        x = permT[t - 1]
        eta = etas[t - 1]
        np.multiply(Ld, -eta, out=w)
        np.exp(w, out=w)
        w /= w.sum(axis=0)
        # posterior mass of each (class, run): the weight W of the class model m predicts is its
        # bin's; max_m W (1 - W) = max over bins (a bin no model predicts has W (1 - W) = 0 and
        # cannot raise a maximum that is >= 0, or turn one < 0 into a query: u <= 0 -> 0 below)
        W = np.bincount(bins[j].ravel(), weights=w.ravel(), minlength=M * R).reshape(M, R)
        np.subtract(1.0, W, out=G)
        G *= W
        u = G.max(axis=0)
        u *= tp
        # u > 1 -> 1 and non-finite -> 0; on disagreement instances u > 0 is floored at eta_t
        # and capped at 1 (reading R11 steps 3-4), i.e. min(max(u, eta_t), 1); else 0
        ok = dis_run[t - 1] & np.isfinite(u) & (u > 0)
        u = np.where(ok, np.minimum(np.maximum(u, eta), 1.0), 0.0)
        z = rng.random(R) < u  # u = 0 off disagreement: never queried
        if z.any():
            # every run at once: a run that does not query adds 0.0 (exact) and its L - min L is
            # recomputed from the same L (same values)
            inc = wrongT[x].T / np.where(z, u, 1.0)
            inc *= z
            LT += inc
            np.subtract(LT, LT.min(axis=0), out=Ld)
            nq += z
            hit = z[:, None] & (nq[:, None] == barr[None, :])
            if hit.any():
                r_i, b_i = np.nonzero(hit)
                Lr = LT[:, r_i].T
                best[r_i, b_i] = _argmin_random(Lr, rng)
                scores[r_i, b_i] = -Lr
                used[r_i, b_i] = barr[b_i]
        if stop_at_budget and (nq >= bmax).all():
            break
    L = LT.T
    final = _argmin_random(L, rng)
    miss = best < 0
    if miss.any():
        r_i, b_i = np.nonzero(miss)
        best[r_i, b_i] = final[r_i]
        scores[r_i, b_i] = -L[r_i]
        used[r_i, b_i] = nq[r_i]
    return ModelPickerResult(best, scores, used, final, nq)


def tune_model_picker(
    preds: np.ndarray, labels: np.ndarray, budgets: list[int], seed: int, grid_size: int = 40,
    reals: int = 8, bound: float = 1e4, lower_log2: float = -12.0,
) -> dict[int, float]:
    """tuning_par per budget (reading R11, ``tune_hyperpar_base``): the grid value
    ``logspace(lower, log2(bound), grid_size, base=2)`` whose mean query count over ``reals``
    full-stream runs is closest to b (first on ties). Authors' defaults are grid 250 x 100 runs;
    the smaller default here is a speed departure."""
    grid = np.logspace(lower_log2, np.log2(bound), grid_size, base=2)
    res = model_picker(preds, labels, [1], np.repeat(grid, reals), seed, grid_size * reals,
                       stop_at_budget=False)
    mean_q = res.queries.reshape(grid_size, reals).mean(axis=1)
    return {int(b): float(grid[int(np.argmin(np.abs(mean_q - b)))]) for b in budgets}


# ------------------------------------------------------------------------------------- CODA

_GRID = np.linspace(1e-6, 1.0 - 1e-6, 256)


def _beta_pdf_logcdf(alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Beta pdf on the quadrature grid and ln max(cdf, 1e-30), cdf by the cumulative trapezoid
    from 0 at the first grid point (reading R12, ``compute_pbest_beta_batched``). Shapes (..., 256)."""
    x = _GRID
    a, b = alpha[..., None], beta[..., None]
    pdf = np.exp((a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x) - betaln(a, b))
    dx = np.diff(x)
    cdf = np.concatenate(
        [np.zeros((*pdf.shape[:-1], 1)), np.cumsum(0.5 * (pdf[..., 1:] + pdf[..., :-1]) * dx, -1)],
        axis=-1,
    )
    return pdf, np.log(np.maximum(cdf, 1e-30))


def _pbest_rows(pdf: np.ndarray, lcdf: np.ndarray) -> np.ndarray:
    """P(model h best | class) from pdf, log-cdf (..., H, G): trapz(pdf * prod_{h' != h} cdf)
    normalised over h."""
    tot = lcdf.sum(axis=-2, keepdims=True)
    prod = np.exp(np.clip(tot - lcdf, -80.0, 80.0))
    r = np.trapezoid(pdf * prod, _GRID, axis=-1)
    return r / np.maximum(r.sum(axis=-1, keepdims=True), 1e-30)


@dataclass(frozen=True)
class CodaResult:
    """CODA run (reading R12): queried indices, P_best after each label, returned model per step."""

    indices: np.ndarray  # (b,)
    pbest: np.ndarray  # (b + 1, H): before any label, then after each
    best: np.ndarray  # (b + 1,)
    stochastic: bool  # a random EIG tie-break happened


class Coda:
    """CODA (Kay et al., ICCV 2025), reading R12; justinkay/coda@f240a4c ``coda/coda.py::CODA``.

    ``P`` (H, N, C) pool probabilities (kept in its dtype; arithmetic in float64; the authors use
    float32 torch). A label changes row y of every D[h] only, so everything that depends on
    class c alone is cached and recomputed for class y after ``add_label``: the likelihood weights
    A (column y, reading R12 "class marginals"), the Beta pdf / log-cdf grids and P(h best | c) rows,
    and the hypothetical rows of the EIG (keyed by class and the set of models predicting it on
    an item). ``eig_dense`` recomputes the literal form of reading R12 from D (tests compare them).
    """

    def __init__(self, P: np.ndarray, alpha: float = 0.9, learning_rate: float = 0.01,
                 multiplier: float = 2.0, diag_prior: bool = True, chunk: int | None = None):
        self.P = np.asarray(P)
        if not np.issubdtype(self.P.dtype, np.floating):
            self.P = self.P.astype(np.float64)
        H, N, C = self.P.shape
        self.lr = learning_rate
        # candidates per eig_dense chunk: bound the (chunk, C, H, 256) float64 temporaries
        self.chunk = chunk or max(1, int(2e7 // (C * H * _GRID.size)))
        self.pred = self.P.argmax(axis=2)  # (H, N)
        ens = self.P.mean(axis=0, dtype=np.float64).argmax(axis=1)
        # soft confusion S[h, c, j] = sum_{n: ens_n = c} P[h, n, j]: one-hot (C, N) sparse product
        E = csr_array((np.ones(N), (ens, np.arange(N))), shape=(C, N))
        if diag_prior:
            base = np.full((C, C), 1.0 / (C - 1))
            np.fill_diagonal(base, 1.0)
        else:
            base = np.full((C, C), 2.0 / C)
        self.D = np.empty((H, C, C))
        self.unlabelled = np.ones(N, dtype=bool)
        # A[n, c] = sum_h sum_j D[h, c, j] P[h, n, j] (unnormalised likelihood weights, as coded);
        # one float64 copy of P[h] per model serves S[h] and A
        self._A = np.zeros((N, C))
        for h in range(H):
            Ph = np.asarray(self.P[h], dtype=np.float64)
            S = E @ Ph
            S /= np.maximum(S.sum(axis=1, keepdims=True), 1e-6)
            self.D[h] = multiplier * (base + (1.0 - alpha) * S)
            self._A += Ph @ self.D[h].T
        self._norm_pi()
        # per-class Beta grids and P(h best | c) rows: (C, H, G) and (C, H)
        al, be = self._ab()
        self._pdf, self._lc = _beta_pdf_logcdf(al.T, be.T)
        self._pdfA, self._lcA = _beta_pdf_logcdf(al.T + 1.0, be.T)
        self._pdfB, self._lcB = _beta_pdf_logcdf(al.T, be.T + 1.0)
        self._r0 = _pbest_rows(self._pdf, self._lc)
        self._rnone = _pbest_rows(self._pdfB, self._lcB)
        # EIG pairs: every item n and each distinct class u predicted on it (first model to
        # predict it), with the set of models predicting u; rows keyed by (class, model set)
        Yc = self.pred.T  # (N, H)
        first = np.ones((N, H), dtype=bool)
        for h in range(1, H):
            first[:, h] = (Yc[:, :h] != Yc[:, h:h + 1]).all(axis=1)
        self._pair_n, pos = np.nonzero(first)
        self._pair_c = Yc[self._pair_n, pos]
        hit = Yc[self._pair_n] == self._pair_c[:, None]  # (pairs, H)
        packed = np.packbits(hit, axis=1)
        keys = np.concatenate([self._pair_c[:, None].astype(np.int64).view(np.uint8)
                               .reshape(len(hit), -1), packed], axis=1)
        _, first_idx, self._pair_key = np.unique(keys, axis=0, return_index=True,
                                                 return_inverse=True)
        self._pair_key = self._pair_key.ravel()
        self._key_c = self._pair_c[first_idx]
        self._key_hit = hit[first_idx]  # (U, H)
        self._key_r = np.zeros((len(first_idx), H))
        self._key_ok = np.zeros(len(first_idx), dtype=bool)

    def _norm_pi(self) -> None:
        self._rs = np.maximum(self._A.sum(axis=1), 1e-12)
        pi = self._A.T @ (1.0 / self._rs)
        self.pi = pi / pi.sum()

    @property
    def pi_n(self) -> np.ndarray:
        """pi_n(c) = A[n, c] / max(sum_c A[n, c], 1e-12) (reading R12), (N, C)."""
        return self._A / self._rs[:, None]

    def _ab(self) -> tuple[np.ndarray, np.ndarray]:
        al = np.einsum("hcc->hc", self.D)
        return al, self.D.sum(axis=2) - al  # (H, C)

    def pbest(self) -> np.ndarray:
        """P_best(h) = sum_c pi(c) P(h best | c) (reading R12)."""
        return self.pi @ self._r0

    def _eig_parts(self):
        """Literal per-call recomputation from D (used by ``eig_dense``)."""
        al, be = self._ab()
        pdf, lc = _beta_pdf_logcdf(al.T, be.T)  # (C, H, G)
        pdfA, lcA = _beta_pdf_logcdf(al.T + 1.0, be.T)
        pdfB, lcB = _beta_pdf_logcdf(al.T, be.T + 1.0)
        r0 = _pbest_rows(pdf, lc)  # (C, H)
        mix0 = self.pi @ r0
        m0 = np.maximum(mix0, 1e-12)
        h0 = -(m0 * np.log2(m0)).sum()
        return pdfA, lcA, pdfB, lcB, r0, mix0, h0

    def _h_after(self, r_hyp: np.ndarray, c: np.ndarray, r0: np.ndarray, mix0: np.ndarray):
        """Entropy (bits) of ``mix0 + pi(c) (r_hyp - r0[c])`` over models (last axis)."""
        mix = mix0 + self.pi[c][..., None] * (r_hyp - r0[c])
        mm = np.maximum(mix, 1e-12)
        return -(mm * np.log2(mm)).sum(axis=-1)

    def _fill_keys(self, keys: np.ndarray) -> None:
        """P(h best | c) after a hypothetical unit update of class c by the models of the key.

        Per class c, as products instead of one quadrature per (key, model): with
        ``L = sum_h' lc_h'`` (a product of the key's hit mask with ``lcA[c] - lcB[c]``) and the
        trapezoid weights w, ``trapz(pdf_h exp(L - lc_h)) = sum_g w_g exp(L_g) q_h(g)``,
        ``q_h = pdf_h exp(-lc_h)`` (``pdfA, lcA`` where h is in the key, else ``pdfB, lcB``).
        ``_pbest_rows`` clips ``L - lc_h`` to [-80, 80]: the upper bound is never reached (a sum
        of log-cdfs, each cdf a trapezoid integral of a density, about 1 at most), and where the
        lower one acts the clipped integrand exceeds this one by at most ``pdf_h e^-80``, so r
        differs by under ``e^-80`` (absolute, before normalising a sum near 1) plus rounding
        (the tests compare it with ``_pbest_rows``, clipping included).
        """
        g = _GRID
        w = np.r_[g[1] - g[0], g[2:] - g[:-2], g[-1] - g[-2]] * 0.5  # trapezoid weights
        kc = self._key_c[keys]
        for c in np.unique(kc):
            k = keys[kc == c]
            hit = self._key_hit[k].astype(np.float64)  # (n, H)
            lA, lB = self._lcA[c], self._lcB[c]  # (H, G)
            qA = self._pdfA[c] * np.exp(-lA)
            qB = self._pdfB[c] * np.exp(-lB)
            L = hit @ (lA - lB) + lB.sum(axis=0)  # (n, G)
            Ew = np.exp(L) * w
            r = np.where(hit > 0, Ew @ qA.T, Ew @ qB.T)
            self._key_r[k] = r / np.maximum(r.sum(axis=1, keepdims=True), 1e-30)
            self._key_ok[k] = True

    def eig(self, cand: np.ndarray) -> np.ndarray:
        """Expected information gain (bits) of labelling each candidate (reading R12, ``eig_batched``).

        Exact rewrite: the hypothetical update of class c on item n depends only on c and the set
        of models predicting c on n, so every class no model predicts on n shares one value per
        class (``none``), and each predicted class needs the quadrature once per (class, set),
        cached until a label of that class: O(n H^2) per call instead of O(n C H G).
        ``eig_dense`` is the literal form (tests compare them).
        """
        cand = np.asarray(cand)
        r0 = self._r0
        mix0 = self.pi @ r0
        m0 = np.maximum(mix0, 1e-12)
        h0 = -(m0 * np.log2(m0)).sum()
        h_none = self._h_after(self._rnone, np.arange(len(r0)), r0, mix0)  # (C,)
        pos = np.full(self.P.shape[1], -1)
        pos[cand] = np.arange(len(cand))
        sel = np.flatnonzero(pos[self._pair_n] >= 0)
        key = self._pair_key[sel]
        todo = np.unique(key[~self._key_ok[key]])
        if todo.size:
            self._fill_keys(todo)
        pc = self._pair_c[sel]
        # the entropy after the update depends on the key alone (its class and model set): once
        # per key when there are fewer keys than candidate pairs, read per pair
        if len(self._key_c) < len(key):
            h_u = self._h_after(self._key_r, self._key_c, r0, mix0)[key]
        else:
            h_u = self._h_after(self._key_r[key], pc, r0, mix0)
        pn = self._pair_n[sel]
        w = self._A[pn, pc] / self._rs[pn]  # pi_n(c) of the pair
        corr = np.bincount(pos[pn], weights=w * (h_u - h_none[pc]), minlength=len(cand))
        base = (self._A @ h_none)[cand] / self._rs[cand]  # sum_c pi_n(c) H_none(c)
        return h0 - (base + corr)

    def eig_dense(self, cand: np.ndarray) -> np.ndarray:
        """EIG with the quadrature for every (candidate, class): the literal form of reading R12."""
        pdfA, lcA, pdfB, lcB, r0, mix0, h0 = self._eig_parts()
        C = r0.shape[0]
        pi_n = self.pi_n
        out = np.empty(len(cand))
        for s in range(0, len(cand), self.chunk):
            c_idx = cand[s:s + self.chunk]
            hit = self.pred[:, c_idx].T[:, None, :] == np.arange(C)[None, :, None]  # (n, C, H)
            pdf_h = np.where(hit[..., None], pdfA[None], pdfB[None])
            lc_h = np.where(hit[..., None], lcA[None], lcB[None])
            r_hyp = _pbest_rows(pdf_h, lc_h)  # (n, C, H)
            h_after = self._h_after(r_hyp, np.arange(C)[None, :], r0, mix0)  # (n, C)
            out[s:s + self.chunk] = h0 - (pi_n[c_idx] * h_after).sum(axis=1)
        return out

    def candidates(self) -> np.ndarray:
        """Unlabelled items on which not all models agree; all unlabelled if none (reading R12)."""
        dis = (self.pred != self.pred[:1]).any(axis=0) & self.unlabelled
        return np.flatnonzero(dis if dis.any() else self.unlabelled)

    def add_label(self, n: int, y: int) -> None:
        """``D[h, y, yhat_h(n)] += learning_rate`` for every h, then recompute pi (reading R12): only
        column y of A and the class-y rows of the caches change."""
        H = self.D.shape[0]
        hs = np.arange(H)
        self.D[hs, y, self.pred[:, n]] += self.lr
        self.unlabelled[n] = False
        # A[:, y] += lr * sum_h P[h, :, yhat_h(n)]
        self._A[:, y] += self.lr * self.P[hs, :, self.pred[:, n]].sum(axis=0, dtype=np.float64)
        self._norm_pi()
        a = self.D[hs, y, y]
        b = (self.D[:, y, :].sum(axis=1) - a)[None]  # (1, H): class y's Beta marginals
        a = a[None]
        self._pdf[y], self._lc[y] = (x[0] for x in _beta_pdf_logcdf(a, b))
        self._pdfA[y], self._lcA[y] = (x[0] for x in _beta_pdf_logcdf(a + 1.0, b))
        self._pdfB[y], self._lcB[y] = (x[0] for x in _beta_pdf_logcdf(a, b + 1.0))
        self._r0[y] = _pbest_rows(self._pdf[y], self._lc[y])
        self._rnone[y] = _pbest_rows(self._pdfB[y], self._lcB[y])
        self._key_ok[self._key_c == y] = False


def coda(P: np.ndarray, labels: np.ndarray, budget: int, seed: int, prefilter_n: int = 0,
         **kw) -> CodaResult:
    """Run CODA for ``budget`` labels (reading R12): EIG acquisition, ties (``isclose`` rtol=atol=1e-8)
    broken by ``random.Random(seed).choice``; ``prefilter_n`` random candidates per step.
    The label loop runs with single-threaded BLAS: its products are small (keys x models x 256)
    and BLAS threads cost more CPU than they save there (docs/methods.md, "Speed")."""
    c = Coda(P, **kw)
    with threadpool_limits(1, user_api="blas"):
        return _coda_loop(c, labels, budget, seed, prefilter_n)


def _coda_loop(c: Coda, labels: np.ndarray, budget: int, seed: int, prefilter_n: int) -> CodaResult:
    g = random.Random(seed)
    y = np.asarray(labels)
    idx, pb = [], [c.pbest()]
    stochastic = False
    for _ in range(budget):
        cand = c.candidates()
        if cand.size == 0:
            break
        if 0 < prefilter_n < cand.size:
            cand = np.asarray(sorted(g.sample(list(cand), prefilter_n)))
        e = c.eig(cand)
        top = e.max()
        ties = np.flatnonzero(np.isclose(e, top, rtol=1e-8, atol=1e-8))
        if ties.size > 1:
            stochastic = True
            n = int(cand[g.choice(list(ties))])
        else:
            n = int(cand[int(np.argmax(e))])
        c.add_label(n, int(y[n]))
        idx.append(n)
        pb.append(c.pbest())
    pbest = np.asarray(pb)
    return CodaResult(np.asarray(idx, dtype=np.int64), pbest, pbest.argmax(axis=1), stochastic)


# -------------------------------------------------------------------------- random baseline


def random_labels(N: int, budget: int, seed: int, n_runs: int = 1) -> np.ndarray:
    """(R, budget) uniform draws without replacement (prefixes serve smaller budgets)."""
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n_runs, N)), axis=1)[:, :budget]


def labelled_accuracy(preds: np.ndarray, idx: np.ndarray, y_idx: np.ndarray) -> np.ndarray:
    """Accuracy of every model on the labelled inputs: preds (M, N), idx (b,), y (b,) -> (M,)."""
    return (np.asarray(preds)[:, idx] == np.asarray(y_idx)[None, :]).mean(axis=1)
