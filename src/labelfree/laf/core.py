"""LaF: labeling-free model ranking by a GLAD-style EM on hard predictions (paper section 3.3).

The matrix ``Yhat`` (inputs x models) of predicted class ids is pruned to the rows where the models
disagree (paper Algorithm 1, lines 1-6), initialised by majority vote (lines 7-15), and fitted
by EM with a closed-form E-step and a conjugate-gradient partial M-step under Gaussian priors
centred on the initial values (lines 16-26; docs/laf.md, reading R2). The fitted model skills
``a`` are the ranking scores (line 27).

Vectorisation: every row's distinct labels are found once by sorting the row; each
element gets the flat index of its (row, distinct label) group, so the per-class sums of the E-step
are one ``np.bincount`` and nothing of size (m, K) is ever built. No Python loop runs over inputs or
classes; the only loops are the EM iterations and the optimiser's.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from scipy.special import expit, log_expit
from scipy.stats import rankdata

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


class LafInputError(ValueError):
    """The prediction matrix or an option given to LaF is invalid; the message says which."""


@dataclass(frozen=True)
class Groups:
    """Per-row grouping of equal labels computed once per prediction matrix.

    flat: (m, n) int64, index ``i * n + g`` of the group of element (i, j), groups numbered in
        ascending label order within a row;
    n_distinct: (m,) number of distinct labels ``|D_i|`` of each row;
    valid: (m, n) bool, ``valid[i, g]`` iff group g exists in row i;
    vote: (m,) majority-vote label, ties to the smallest class id (docs/laf.md, reading R3);
    agree: (m, n) bool, ``Y[i, j] == vote[i]``.
    """

    flat: np.ndarray
    n_distinct: np.ndarray
    valid: np.ndarray
    vote: np.ndarray
    agree: np.ndarray


def group_labels(Y: np.ndarray) -> Groups:
    """Group equal labels row by row and take the majority vote (paper Algorithm 1, lines 7-9)."""
    m, n = Y.shape
    order = np.argsort(Y, axis=1, kind="stable")
    Ys = np.take_along_axis(Y, order, axis=1)
    start = np.ones((m, n), dtype=bool)
    start[:, 1:] = Ys[:, 1:] != Ys[:, :-1]
    seg_sorted = np.cumsum(start, axis=1) - 1
    seg = np.empty_like(seg_sorted)
    np.put_along_axis(seg, order, seg_sorted, axis=1)
    flat = seg + (np.arange(m, dtype=np.int64) * n)[:, None]
    n_distinct = start.sum(axis=1)
    valid = np.arange(n)[None, :] < n_distinct[:, None]
    counts = np.bincount(flat.ravel(), minlength=m * n).reshape(m, n)
    # First group with the largest count = smallest label among the modes (scipy.stats.mode).
    best_group = counts.argmax(axis=1)
    first_pos = np.argmax(seg_sorted == best_group[:, None], axis=1)
    vote = Ys[np.arange(m), first_pos]
    agree = vote[:, None] == Y
    return Groups(flat=flat, n_distinct=n_distinct, valid=valid, vote=vote, agree=agree)


#: Readings of the per-input parameter (docs/laf.md, reading R1). ``easiness`` (default): the
#: reference code / GLAD, ``b_i`` a log-easiness initialised to the vote-agreement fraction, link
#: ``sigma(a_j e^{b_i})``. ``difficulty``: the paper's Eq. 1 and link as printed, ``b_i`` the
#: difficulty alpha_i = fraction of models disagreeing with the vote, link ``sigma(alpha_i
#: beta_j)``.
INPUT_PARAMS = ("easiness", "difficulty")


def multiplier(b: np.ndarray, input_param: str = "easiness") -> np.ndarray:
    """What multiplies ``a_j`` in the link: ``e^{b_i}`` (easiness) or ``b_i`` (difficulty)."""
    if input_param == "easiness":
        return np.exp(b)
    if input_param == "difficulty":
        return np.asarray(b, dtype=np.float64)
    raise LafInputError(f"input_param must be one of {INPUT_PARAMS}, got {input_param!r}")


def e_step(
    a: np.ndarray, b: np.ndarray, groups: Groups, K: int, input_param: str = "easiness"
) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form E-step (docs/laf.md, reading R2): ``pi[i, j] = q_{i, Y[i, j]}`` and ``log Z_i``.

    ``log Z_i = log(sum_{k in D_i} exp(s_ik) + K - |D_i|)`` (max-shifted), the per-row normaliser
    that the observed-data log posterior also needs. ``x_ij = a_j * multiplier(b_i)`` (reading R1).
    """
    m, n = groups.flat.shape
    w = np.outer(multiplier(b, input_param), a) + np.log(K - 1.0)
    s_group = np.bincount(groups.flat.ravel(), weights=w.ravel(), minlength=m * n).reshape(m, n)
    s_group = np.where(groups.valid, s_group, -np.inf)
    shift = np.maximum(s_group.max(axis=1), 0.0)
    z = np.exp(s_group - shift[:, None]).sum(axis=1) + (K - groups.n_distinct) * np.exp(-shift)
    log_z = shift + np.log(z)
    s_elem = s_group.ravel()[groups.flat]
    pi = np.exp(s_elem - log_z[:, None])
    return np.clip(pi, 0.0, 1.0), log_z


def q_value(
    a: np.ndarray,
    b: np.ndarray,
    pi: np.ndarray,
    a0: np.ndarray,
    b0: np.ndarray,
    K: int,
    input_param: str = "easiness",
) -> float:
    """Expected complete-data log posterior Q(a, b; pi), all constants kept (docs/laf.md, reading
    R2)."""
    return _q_and_grad(a, b, pi, a0, b0, K, input_param)[0]


def q_gradient(
    a: np.ndarray,
    b: np.ndarray,
    pi: np.ndarray,
    a0: np.ndarray,
    b0: np.ndarray,
    K: int,
    input_param: str = "easiness",
) -> tuple[np.ndarray, np.ndarray]:
    """Analytic gradients dQ/da (n,) and dQ/db (m',) (docs/laf.md, reading R2)."""
    _, ga, gb = _q_and_grad(a, b, pi, a0, b0, K, input_param)
    return ga, gb


class RowClasses:
    """Rows of ``b`` with equal values, kept from call to call (:func:`_q_and_grad`).

    A row's E-step posteriors depend on its pattern of agreement and on ``b_i`` only, so rows of
    equal pattern keep equal ``b_i`` through the M-step (about two rows in five are distinct on
    the study's zoos). :meth:`split` returns (``first``: one row of each class, ``row``: each row's
    class) such that ``b[first][row]`` equals ``b`` exactly; it reuses the previous classes when
    they still hold (one comparison) and recomputes them (``np.unique``) when not.
    """

    def __init__(self) -> None:
        self.first: np.ndarray | None = None
        self.row: np.ndarray | None = None

    def split(self, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.row is None or self.row.size != b.size or not (b[self.first][self.row] == b).all():
            _, self.first, self.row = np.unique(b, return_index=True, return_inverse=True)
        return self.first, self.row


def _q_and_grad(a, b, pi, a0, b0, K, input_param="easiness", rows=None):
    """Q and its gradient in one pass (docs/laf.md, reading R2), with O(m'n) work and two
    transcendentals.

    Uses that ``x_ij = a_j e^{b_i}`` has the sign of ``a_j``: with ``e = exp(-|x|)``,
    ``log sigma(x) = min(x, 0) - log1p(e)`` and ``sigma(x) = 1/(1+e)`` (a_j >= 0) or ``e/(1+e)``;
    every sum weighted by ``pi`` reduces to matrix-vector products. The paper's reading (reading R1,
    ``difficulty``) has a multiplier of either sign and goes through :func:`_q_and_grad_linear`.

    A row of ``e`` depends on ``b_i`` only: the transcendentals run on one row per class of equal
    ``b_i`` (``rows``: the caller's :class:`RowClasses`, kept over the M-step's calls) and the
    rows are gathered back, so every sum and product below sees the same matrices, bit for bit.
    """
    if input_param != "easiness":
        multiplier(b, input_param)  # validates the name
        return _q_and_grad_linear(a, b, pi, a0, b0, K)
    first, row = (rows or RowClasses()).split(b)
    eb_u = np.exp(b[first])
    eb = eb_u[row]
    neg = a < 0
    e = np.outer(eb_u, -np.abs(a))
    np.exp(e, out=e)
    log1p_sum = np.log1p(e)[row].sum()
    e += 1.0
    sig = np.reciprocal(e, out=e)
    if neg.any():
        np.subtract(1.0, sig, out=sig, where=neg[None, :])
    sig = sig[row]
    pa = pi @ a
    sum_ls = eb.sum() * a[neg].sum() - log1p_sum
    # sum (1 - pi) * (x + log(K-1)), x = outer(e^b, a)
    wrong = eb @ (a.sum() - pa) + np.log(K - 1.0) * (pi.size - pi.sum())
    da, db = a - a0, b - b0
    q = (
        pi.shape[0] * np.log(1.0 / K)
        + sum_ls
        - wrong
        - 0.5 * (da @ da + db @ db)
        - _LOG_SQRT_2PI * (a.size + b.size)
    )
    ga = pi.T @ eb - sig.T @ eb - da
    gb = eb * (pa - sig @ a) - db
    return float(q), ga, gb


def _q_and_grad_linear(a, b, pi, a0, b0, K):
    """Q and gradient for the paper's link ``sigma(alpha_i beta_j)`` (reading R1, ``difficulty``).

    Per element ``pi log sigma(x) + (1-pi)(log(1-sigma(x)) - log(K-1))
    = log sigma(-x) + pi x - (1-pi) log(K-1)`` with ``x = b_i a_j``; ``dQ/dx = pi - sigma(x)``,
    so ``dQ/da_j = sum_i b_i (pi_ij - sigma_ij) - (a_j - a0_j)`` and
    ``dQ/db_i = sum_j a_j (pi_ij - sigma_ij) - (b_i - b0_i)``.
    """
    x = np.outer(b, a)
    r = pi - expit(x)
    da, db = a - a0, b - b0
    q = (
        pi.shape[0] * np.log(1.0 / K)
        + log_expit(-x).sum()
        + (pi * x).sum()
        - np.log(K - 1.0) * (pi.size - pi.sum())
        - 0.5 * (da @ da + db @ db)
        - _LOG_SQRT_2PI * (a.size + b.size)
    )
    return float(q), r.T @ b - da, r @ a - db


def observed_log_posterior(
    a: np.ndarray,
    b: np.ndarray,
    groups: Groups,
    a0: np.ndarray,
    b0: np.ndarray,
    K: int,
    input_param: str = "easiness",
) -> float:
    """Observed-data log posterior, non-decreasing under (G)EM (docs/laf.md, reading R2)."""
    _, log_z = e_step(a, b, groups, K, input_param)
    x = np.outer(multiplier(b, input_param), a)
    c = (log_expit(-x) - np.log(K - 1.0)).sum(axis=1)
    prior = -0.5 * (((a - a0) ** 2).sum() + ((b - b0) ** 2).sum())
    prior -= _LOG_SQRT_2PI * (a.size + b.size)
    return float((np.log(1.0 / K) + c + log_z).sum() + prior)


def m_step(
    a: np.ndarray,
    b: np.ndarray,
    pi: np.ndarray,
    a0: np.ndarray,
    b0: np.ndarray,
    K: int,
    gtol: float = 0.01,
    maxiter: int = 25,
    input_param: str = "easiness",
) -> tuple[np.ndarray, np.ndarray]:
    """Partial M-step: CG on -Q over [a, b], ``tol=gtol``, ``maxiter`` iterations (docs/laf.md,
    reading R2)."""
    n = a.size
    rows = RowClasses()

    def fun(theta):
        q, ga, gb = _q_and_grad(theta[:n], theta[n:], pi, a0, b0, K, input_param, rows)
        return -q, -np.concatenate([ga, gb])

    res = optimize.minimize(
        fun,
        np.concatenate([a, b]),
        jac=True,
        method="CG",
        tol=gtol,
        options={"maxiter": maxiter},
    )
    return res.x[:n].copy(), res.x[n:].copy()


@dataclass(frozen=True)
class LafResult:
    """Outcome of :func:`rank`.

    score: (n,) fitted model skills ``a`` (higher = better); rank: (n,) 1 = best ('min' ties);
    a0: (n,) majority-vote pseudo-accuracies; keep: (m',) indices of the rows used;
    b: (m',) fitted log-easiness; b0: (m',) its initial value; iterations: EM iterations;
    q: final Q; converged: relative-Q rule met before the cap; degenerate: no disagreement
    (docs/laf.md, reading R3); acc_hat: (n,) posterior-expected accuracy (an extra, not in the paper);
    q_history / logpost_history: Q and observed-data log posterior after every EM iteration;
    wall_time: seconds.
    """

    score: np.ndarray
    rank: np.ndarray
    a0: np.ndarray
    keep: np.ndarray
    b: np.ndarray
    b0: np.ndarray
    iterations: int
    q: float
    converged: bool
    degenerate: bool
    acc_hat: np.ndarray
    q_history: list[float] = field(default_factory=list)
    logpost_history: list[float] = field(default_factory=list)
    wall_time: float = 0.0


def ranks_descending(score: np.ndarray) -> np.ndarray:
    """Rank 1 = largest score; equal scores share the best rank ('min' method)."""
    return rankdata(-np.asarray(score, dtype=float), method="min").astype(np.int64)


def check_predictions(Yhat: np.ndarray, K: int) -> np.ndarray:
    """Validate ``Yhat`` (m, n) of class ids in 0..K-1 and return it as int64 (docs/laf.md, reading
    R3)."""
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 2:
        raise LafInputError(f"K must be an integer >= 2, got {K!r}")
    Y = np.asarray(Yhat)
    if Y.ndim != 2:
        raise LafInputError(f"Yhat must be a 2-D (inputs x models) matrix, got shape {Y.shape}")
    m, n = Y.shape
    if n < 2:
        raise LafInputError(f"ranking needs at least 2 models, Yhat has {n} column(s)")
    if m < 1:
        raise LafInputError("Yhat has no rows (no inputs)")
    if not np.issubdtype(Y.dtype, np.integer):
        if not np.issubdtype(Y.dtype, np.floating) and Y.dtype != bool:
            raise LafInputError(f"Yhat must hold integer class ids, got dtype {Y.dtype}")
        if not np.all(np.isfinite(Y)):
            raise LafInputError("Yhat contains NaN or inf; predictions must be class ids")
        if np.any(np.round(Y) != Y):
            raise LafInputError("Yhat contains non-integer values; predictions must be class ids")
    Y = Y.astype(np.int64)
    lo, hi = int(Y.min()), int(Y.max())
    if lo < 0 or hi >= K:
        raise LafInputError(f"Yhat has labels outside 0..{K - 1} (min {lo}, max {hi})")
    return Y


def rank(
    Yhat: np.ndarray,
    K: int,
    *,
    prune: bool = True,
    optimize_params: bool = True,
    rel_tol: float = 1e-5,
    max_iter: int = 1000,
    cg_gtol: float = 0.01,
    cg_maxiter: int = 25,
    track_logpost: bool = False,
    input_param: str = "easiness",
) -> LafResult:
    """Rank models by LaF (paper section 3.3, Algorithm 1).

    Yhat: (m, n) predicted class ids in 0..K-1 (inputs x models); K: number of task classes.
    ``prune=False`` is the "w/o pruning" ablation, ``optimize_params=False`` "w/o optimizing"
    (paper section 5.3). ``track_logpost`` records the observed-data log posterior per iteration.
    ``input_param`` picks the reading of the per-input parameter (docs/laf.md, reading R1; see
    :data:`INPUT_PARAMS`): ``easiness`` (default, the reference code) or ``difficulty`` (the
    paper's printed definition; ``b0`` is then the disagreement fraction alpha_i).
    With no disagreeing row (after pruning) the result is degenerate: equal scores, flagged.
    """
    t0 = time.perf_counter()
    if input_param not in INPUT_PARAMS:
        raise LafInputError(f"input_param must be one of {INPUT_PARAMS}, got {input_param!r}")
    Y = check_predictions(Yhat, K)
    m, n = Y.shape
    if n == 2:
        warnings.warn(
            "LaF with 2 models: every disagreement is a vote tie, so the result depends on the "
            "order of class ids (docs/laf.md, reading R3)",
            stacklevel=2,
        )
    keep = np.flatnonzero((Y[:, :1] != Y).any(axis=1)) if prune else np.arange(m)
    if keep.size == 0:
        return _degenerate(n, keep, t0)
    Yk = Y[keep]
    groups = group_labels(Yk)
    a0 = groups.agree.mean(axis=0)
    b0 = groups.agree.mean(axis=1)
    if input_param == "difficulty":
        b0 = 1.0 - b0  # paper Eq. 1: alpha_i = fraction of models disagreeing with the vote
    ip = input_param
    if optimize_params:
        fit = _fit(groups, a0, b0, K, ip, rel_tol, max_iter, cg_gtol, cg_maxiter, track_logpost)
    else:
        fit = _Fit(a0.copy(), b0.copy(), 0, float("nan"), True, [], [])
    a, b = fit.a, fit.b
    pi, _ = e_step(a, b, groups, K, ip)
    acc_hat = ((m - keep.size) + pi.sum(axis=0)) / m
    score = a.copy()
    return LafResult(
        score=score,
        rank=ranks_descending(score),
        a0=a0,
        keep=keep,
        b=b,
        b0=b0,
        iterations=fit.iterations,
        q=float(fit.q),
        converged=fit.converged,
        degenerate=False,
        acc_hat=acc_hat,
        q_history=fit.q_history,
        logpost_history=fit.logpost_history,
        wall_time=time.perf_counter() - t0,
    )


def _degenerate(n: int, keep: np.ndarray, t0: float) -> LafResult:
    """No disagreeing row: equal scores for every model, flagged (docs/laf.md, reading R3)."""
    score = np.ones(n)
    return LafResult(
        score=score,
        rank=ranks_descending(score),
        a0=score.copy(),
        keep=keep,
        b=np.zeros(0),
        b0=np.zeros(0),
        iterations=0,
        q=float("nan"),
        converged=True,
        degenerate=True,
        acc_hat=score.copy(),
        wall_time=time.perf_counter() - t0,
    )


@dataclass
class _Fit:
    """The EM's fitted skills ``a`` and per-input parameters ``b``, its iterations, final Q,
    whether it converged, and the Q (and log posterior) after each iteration."""

    a: np.ndarray
    b: np.ndarray
    iterations: int
    q: float
    converged: bool
    q_history: list[float]
    logpost_history: list[float]


def _fit(
    groups: Groups, a0: np.ndarray, b0: np.ndarray, K: int, ip: str, rel_tol: float,
    max_iter: int, cg_gtol: float, cg_maxiter: int, track_logpost: bool,
) -> _Fit:
    """EM from (a0, b0) (paper Algorithm 1, lines 16-26): E-step, partial M-step, until the
    relative change of Q is at most ``rel_tol`` or ``max_iter`` iterations ran."""
    a, b = a0.copy(), b0.copy()
    q_hist: list[float] = []
    lp_hist: list[float] = []
    converged = True
    if track_logpost:
        lp_hist.append(observed_log_posterior(a, b, groups, a0, b0, K, ip))
    pi, _ = e_step(a, b, groups, K, ip)
    q_last = q_value(a, b, pi, a0, b0, K, ip)
    a, b = m_step(a, b, pi, a0, b0, K, cg_gtol, cg_maxiter, ip)
    q_cur = q_value(a, b, pi, a0, b0, K, ip)
    it = 1
    q_hist.append(q_cur)
    if track_logpost:
        lp_hist.append(observed_log_posterior(a, b, groups, a0, b0, K, ip))
    while abs((q_cur - q_last) / q_last) > rel_tol:
        if it >= max_iter:
            converged = False
            break
        q_last = q_cur
        pi, _ = e_step(a, b, groups, K, ip)
        a, b = m_step(a, b, pi, a0, b0, K, cg_gtol, cg_maxiter, ip)
        q_cur = q_value(a, b, pi, a0, b0, K, ip)
        it += 1
        q_hist.append(q_cur)
        if track_logpost:
            lp_hist.append(observed_log_posterior(a, b, groups, a0, b0, K, ip))
    return _Fit(a, b, it, q_cur, converged, q_hist, lp_hist)
