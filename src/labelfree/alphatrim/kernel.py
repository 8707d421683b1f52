"""The trimmed Kolmogorov-Smirnov distance and the acceptance threshold (paper Sections
III-A to III-C).

A *candidate* sample (logit gaps of one model or one ensemble on N test points) is compared
with a fixed *reference* function F0, the linearly interpolated eCDF of a reference sample
(docs/alphatrim.md, reading R4). The trimmed distance

    d_alpha = min_{F~ in R_alpha(G0_hat)} || F~ - F0 ||_inf

is computed in closed form (del Barrio-Inouzhe-Matran, Theorem 2.5; paper Section III-C).

Implementation note (equivalent to evaluating on the union of both samples, cheaper). The trimmed
candidate CDF is a step function that jumps only at candidate values and F0 is monotone, so every constraint
that the union grid places at a *reference* point between two candidate values is
dominated by the constraint at the neighbouring candidate value; and for tied candidate values,
constraints at intermediate steps are implied by those at the ends of the tie. Hence the closed
form can run on the N candidate order statistics alone, with t_i = i/N and t_{i-1} = (i-1)/N:

    xu_i = F0(c_(i)) - k (i-1)/N,   xl_i = F0(c_(i)) - k i/N = xu_i - k/N,   k = 1/(1-alpha)

and the optimum equals the union-grid value and that of the linear programme it solves
(docs/alphatrim.md, reading R4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ReferenceCDF:
    """Linearly interpolated eCDF of a reference sample (docs/alphatrim.md, reading R4).

    knots: sorted distinct values of the reference sample; heights: the eCDF at each knot
    (cumulative count / n, ties included). F0 = 0 left of the first knot, 1 right of the last.
    """

    knots: np.ndarray
    heights: np.ndarray
    n: int

    @classmethod
    def from_sample(cls, sample: np.ndarray) -> ReferenceCDF:
        """Build F0 from a 1-D sample (for a pooled reference: all M*N logit gaps,
        docs/alphatrim.md reading R2)."""
        r = np.asarray(sample, dtype=np.float64).ravel()
        if r.size == 0:
            raise ValueError("ReferenceCDF.from_sample: the reference sample is empty")
        if not np.isfinite(r).all():
            raise ValueError("ReferenceCDF.from_sample: the reference sample has NaN or inf")
        r = np.sort(r)
        last = np.ones(r.size, dtype=bool)
        last[:-1] = r[1:] != r[:-1]
        pos = np.flatnonzero(last)
        return cls(knots=r[pos], heights=(pos + 1) / r.size, n=int(r.size))

    def __call__(self, z: np.ndarray) -> np.ndarray:
        """Evaluate F0 at ``z`` (any shape)."""
        z = np.asarray(z, dtype=np.float64)
        return np.interp(z.ravel(), self.knots, self.heights, left=0.0, right=1.0).reshape(
            z.shape
        )


def reference_cdf(reference: np.ndarray) -> ReferenceCDF:
    """The reference function of Algorithm 1: eCDF of the pooled M x N reference logit gaps.

    ``reference`` may be (M, N) (M models) or a flat sample; the eCDF of the pooled values is
    the average of the M per-model eCDFs (paper Eq. 8).
    """
    return ReferenceCDF.from_sample(np.asarray(reference).ravel())


def dkw_constant(n: int) -> float:
    """Wei-Dudley constant of the two-sample DKW bound: 2 if N >= 458, otherwise e (paper Section
    III-A)."""
    return 2.0 if n >= 458 else math.e


def delta_a(n: int, eps: float = 0.01) -> float:
    """Two-sample DKW radius delta_a = sqrt(ln(C/eps)/N) (paper Section III-A)."""
    if n <= 0:
        raise ValueError(f"delta_a: N must be positive, got {n}")
    if not 0 < eps < 1:
        raise ValueError(f"delta_a: eps must lie in (0, 1), got {eps}")
    return math.sqrt(math.log(dkw_constant(n) / eps) / n)


def acceptance_threshold(n: int, eps: float = 0.01) -> float:
    """gamma = delta_a + 1/N (paper eq. 57; docs/alphatrim.md, reading R3): 0.036645 at N = 4000,
    eps = 0.01."""
    return delta_a(n, eps) + 1.0 / n


def _check_alphas(alpha: np.ndarray | float) -> np.ndarray:
    a = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    if a.ndim != 1 or ((a < 0) | (a >= 1)).any():
        raise ValueError(f"trimming levels must lie in [0, 1), got {alpha}")
    return a


def _distance_from_sorted(f: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Closed-form d_alpha for rows of F0 evaluated at sorted candidate values (paper Section
    III-C).

    f: (R, N) float64, F0(c_(1..N)) per row, non-decreasing along axis 1.
    k: (R,) or (R, 1) values of 1/(1-alpha), one per row.
    Returns (R,) distances. Works in place on two (R, N) buffers (no other large temporaries).
    """
    rows, n = f.shape
    k = np.asarray(k, dtype=np.float64).reshape(rows, 1)
    lo = 1.0 - k  # = -alpha / (1 - alpha)
    step = k / n
    # xu_i = F0(c_i) - k (i-1)/N  for i = 1..N (column i-1)
    xu = np.multiply(step, np.arange(n, dtype=np.float64))
    np.subtract(f, xu, out=xu)
    g = np.empty((rows, n + 1))
    # U_j = max_{i >= j+1} xu_i for j = 0..N-1 (suffix maxima); U_N = lo
    np.maximum.accumulate(xu[:, ::-1], axis=1, out=g[:, n - 1 :: -1])
    g[:, n:] = lo
    # L_0 = 0; L_j = min_{i <= j} xl_i = prefix-min(xu)_j - k/N for j = 1..N
    tmp = np.minimum.accumulate(xu, axis=1)
    g[:, 1:] += tmp
    g[:, 1:] -= step
    g *= 0.5
    np.maximum(g, lo, out=g)
    np.minimum(g, 0.0, out=g)
    # d = max( max_i xu_i - g_{i-1},  max_i g_i - xl_i ),  xl_i = xu_i - k/N
    np.subtract(xu, g[:, :n], out=tmp)
    d1 = tmp.max(axis=1)
    np.subtract(g[:, 1:], xu, out=tmp)
    d2 = tmp.max(axis=1) + step[:, 0]
    return np.maximum(d1, d2)


def trimmed_ks(
    sample: np.ndarray, reference_cdf: ReferenceCDF | np.ndarray, alpha: np.ndarray | float
) -> np.ndarray:
    """Trimmed KS distance d_alpha between candidate sample(s) and a reference (paper Section
    III-C).

    sample: (N,) one candidate or (C, N) candidates (values of the score, e.g. logit gaps).
    reference_cdf: a :class:`ReferenceCDF`, or a reference sample from which F0 is built.
    alpha: a trimming level or a grid of T levels in [0, 1).
    Returns d with shape (T,) for one candidate or (C, T); 0 <= d <= 1, non-increasing in alpha;
    alpha = 0 gives the ordinary KS distance to F0 (within 1/N_ref of the two-sample statistic).
    """
    ref = reference_cdf if isinstance(reference_cdf, ReferenceCDF) else ReferenceCDF.from_sample(
        reference_cdf
    )
    x = np.asarray(sample, dtype=np.float64)
    single = x.ndim == 1
    x = np.atleast_2d(x)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"trimmed_ks: sample must be (N,) or (C, N) with N > 0, got {x.shape}")
    alphas = _check_alphas(alpha)
    f = ref(np.sort(x, axis=1))
    c = f.shape[0]
    k = 1.0 / (1.0 - alphas)
    # rows = (alpha, candidate) pairs; F is shared, so broadcast without copying per alpha
    d = np.empty((c, alphas.size))
    for t, kt in enumerate(k):  # T <= ~13: loop over the grid, vectorised over candidates
        d[:, t] = _distance_from_sorted(f, np.full(c, kt))
    return d[0] if single else d


def trimming_function(
    sample: np.ndarray, reference_cdf: ReferenceCDF | np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optimal trimming of one candidate (paper Section III-C).

    Returns (sorted sample, h at t_0..t_N, weights w_i = N (h(t_i) - h(t_{i-1}))); the weights
    lie in [0, 1/(1-alpha)] and average to 1; low weights show where the candidate deviates.
    """
    ref = reference_cdf if isinstance(reference_cdf, ReferenceCDF) else ReferenceCDF.from_sample(
        reference_cdf
    )
    (a,) = _check_alphas(alpha)
    c = np.sort(np.asarray(sample, dtype=np.float64).ravel())
    n = c.size
    k = 1.0 / (1.0 - a)
    f = ref(c)
    xu = f - k * np.arange(n) / n
    u = np.append(np.maximum.accumulate(xu[::-1])[::-1], 1.0 - k)
    low = np.insert(np.minimum.accumulate(xu) - k / n, 0, 0.0)
    g = np.clip((u + low) / 2.0, 1.0 - k, 0.0)
    h = g + k * np.arange(n + 1) / n
    return c, h, n * np.diff(h)


def ecdf_distance(reference: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """Sup-norm distance between the step eCDF of ``reference`` and that of each sample row.

    Exact over the union of jump points, ties included (``linf_to_reference``, docs/alphatrim.md
    reading R6).
    reference: flat sample (e.g. pooled M x N_test gaps); samples: (N,) or (E, N).
    Returns a scalar for one sample or (E,).
    """
    r = np.sort(np.asarray(reference, dtype=np.float64).ravel())
    s = np.asarray(samples, dtype=np.float64)
    single = s.ndim == 1
    s = np.sort(np.atleast_2d(s), axis=1)
    rows, n = s.shape
    # E(e) right value = (index of last tie + 1)/n; E(e-) = (index of first tie)/n
    idx = np.broadcast_to(np.arange(n), (rows, n))
    is_last = np.ones((rows, n), dtype=bool)
    is_last[:, :-1] = s[:, 1:] != s[:, :-1]
    is_first = np.ones((rows, n), dtype=bool)
    is_first[:, 1:] = s[:, 1:] != s[:, :-1]
    last = np.minimum.accumulate(np.where(is_last, idx, n)[:, ::-1], axis=1)[:, ::-1]
    first = np.maximum.accumulate(np.where(is_first, idx, 0), axis=1)
    e_right = (last + 1) / n
    e_left = first / n
    r_right = np.searchsorted(r, s, side="right") / r.size
    r_left = np.searchsorted(r, s, side="left") / r.size
    d = np.maximum(np.abs(r_right - e_right), np.abs(r_left - e_left)).max(axis=1)
    return float(d[0]) if single else d
