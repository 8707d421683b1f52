"""Baselines of the LaF study (paper section 4.4): Random, SDS, CES (+ oracle CES-best), CRC.

Sampling baselines pick a labelled subset of the test set and score each model by its accuracy on
it. Every draw takes its own ``numpy.random.Generator``, so callers seed each (test set, method,
budget, repetition) independently (docs/laf.md, reading R7) and identical seeds give identical
samples.
"""

from __future__ import annotations

import numpy as np

from labelfree.laf.core import group_labels

#: SDS group boundaries (docs/laf.md, reading R9): top = first floor(0.27 n), bottom = from
#: floor(0.73 n).
SDS_TOP, SDS_BOTTOM, SDS_POOL = 0.27, 0.73, 0.25
#: CES constants of the LaF authors' code (docs/laf.md, reading R8).
CES_INIT, CES_STEP, CES_CANDIDATES, CES_BINS = 10, 5, 30, 5


class InfeasibleBudget(ValueError):
    """A budget exceeds what a sampler can label (e.g. SDS pool smaller than the budget)."""


def budget_grid(n_models: int, hi: int = 180, step: int = 5, lo: int | None = None) -> list[int]:
    """Budgets ``n, n+step, ..., hi`` (docs/laf.md, reading R10): 31/32/33 entries for
    n = 30/25/20."""
    lo = n_models if lo is None else lo
    if lo > hi:
        raise ValueError(f"budget grid: lowest budget {lo} exceeds the highest {hi}")
    return list(range(lo, hi + 1, step))


def subset_accuracy(correct: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Accuracy of every model on the labelled rows ``idx``: correct (m, n) bool ->
    (n,) or (R, n)."""
    return correct[idx].mean(axis=-2)


# ---------------------------------------------------------------------------------------------
# Random (paper section 4.4)
# ---------------------------------------------------------------------------------------------


def random_sample(m: int, budget: int, rng: np.random.Generator) -> np.ndarray:
    """``budget`` distinct indices drawn uniformly from ``range(m)``, without replacement."""
    if budget > m:
        raise InfeasibleBudget(f"random: budget {budget} exceeds the {m} test inputs")
    return rng.choice(m, size=budget, replace=False)


# ---------------------------------------------------------------------------------------------
# SDS (paper section 4.4; docs/laf.md, reading R9)
# ---------------------------------------------------------------------------------------------


def sds_groups(n: int) -> tuple[int, int]:
    """(top size, bottom start) of SDS: n = 30 -> 8 top / 9 bottom."""
    return int(np.floor(SDS_TOP * n)), int(np.floor(SDS_BOTTOM * n))


def sds_pool(Yhat: np.ndarray) -> np.ndarray:
    """Candidate pool of SDS: the floor(0.25 m) most discriminative inputs (docs/laf.md, reading
    R9)."""
    Y = np.asarray(Yhat)
    m, n = Y.shape
    agree = group_labels(Y).agree  # majority vote over all models, ties -> smallest label
    r = agree.sum(axis=0)
    order = np.argsort(r, kind="stable")[::-1]
    n_top, bottom_start = sds_groups(n)
    top, bottom = order[:n_top], order[bottom_start:]
    d = agree[:, top].mean(axis=1) - agree[:, bottom].mean(axis=1)
    return np.argsort(d, kind="stable")[::-1][: int(np.floor(SDS_POOL * m))]


def sds_sample(pool: np.ndarray, budget: int, rng: np.random.Generator) -> np.ndarray:
    """``budget`` distinct inputs drawn uniformly from the SDS pool, each budget drawn anew."""
    if budget > pool.size:
        raise InfeasibleBudget(f"SDS: budget {budget} exceeds the pool of {pool.size} inputs")
    return pool[rng.choice(pool.size, size=budget, replace=False)]


# ---------------------------------------------------------------------------------------------
# CES (paper section 4.4; docs/laf.md, reading R8)
# ---------------------------------------------------------------------------------------------


def ces_histogram(
    values: np.ndarray, lo: np.ndarray | None = None, hi: np.ndarray | None = None
) -> np.ndarray:
    """H(A), the CES histogram (docs/laf.md, reading R8), for sets of outputs ``values`` (..., a,
    K) -> (..., K, 5).

    Per output column: edges ``linspace(lo, hi, 5)``; cells ``[e_t, e_{t+1})`` for t < 4 and a
    fifth cell for values at (or above) ``hi``; counts divided by ``a`` (each column sums to 1).
    ``lo``/``hi`` default to the set's own per-column min/max (the LaF adaptation: H(G) and H(S)
    each use their own range); the ``original`` objective passes the whole test set's range, so
    every histogram of a subset uses the test set's cells.
    """
    v = np.asarray(values, dtype=np.float64)
    lo = v.min(axis=-2, keepdims=True) if lo is None else np.asarray(lo, dtype=np.float64)
    hi = v.max(axis=-2, keepdims=True) if hi is None else np.asarray(hi, dtype=np.float64)
    return _cell_counts(v, lo, hi) / v.shape[-2]


def _cell_counts(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Counts (..., K, 5) of the values (..., a, K) in the five CES cells of [lo, hi]."""
    edges = [lo + (hi - lo) * (t / (CES_BINS - 1)) for t in range(1, CES_BINS - 1)]
    cell = sum((v >= e).astype(np.intp) for e in edges) + (v >= hi).astype(np.intp)
    lead, K = v.shape[:-2], v.shape[-1]
    sets = int(np.prod(lead, dtype=np.int64))
    # One bincount over (set, column, cell) ids: no (..., a, K, 5) one-hot array.
    ids = cell + CES_BINS * np.arange(K)
    if lead:
        ids = ids + (CES_BINS * K * np.arange(sets)).reshape(*lead, 1, 1)
    counts = np.bincount(ids.ravel(), minlength=sets * K * CES_BINS)
    return counts.reshape(*lead, K, CES_BINS)


def _log2_or_zero(h: np.ndarray) -> np.ndarray:
    out = np.zeros_like(h)
    np.log2(h, out=out, where=h > 0)
    return out


#: Probabilities are clipped to this before the logarithm in the ``original`` objective, as in
#: the original CES code (Li et al., FSE 2019; github.com/Lizn-zn/DNNOpAcc, ``neuron_entropy``).
CES_CLIP = 1e-10


def ces_kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Mean over output columns of KL(p || q) with both clipped at 1e-10 inside the log.

    p, q: (..., K, 5) cell probabilities. The original CES code maximises the negative of this
    (its ``coverage`` is the mean of ``sum p log q - sum p log p`` over neurons), i.e. it
    minimises the divergence of the selection's output distribution from the test set's.
    """
    lp = np.log(np.clip(p, CES_CLIP, 1.0))
    lq = np.log(np.clip(q, CES_CLIP, 1.0))
    return (p * (lp - lq)).sum(axis=-1).mean(axis=-1)


def ces_test_histogram(probs: np.ndarray, chunk: int = 8192) -> tuple[np.ndarray, ...]:
    """(lo (K,), hi (K,), H(T) (K, 5)) of the whole test set ``probs`` (m, K), row chunk by row
    chunk so that nothing of size (m, K, 5) is built (the ``original`` objective)."""
    P = np.asarray(probs)
    lo = P.min(axis=0).astype(np.float64)
    hi = P.max(axis=0).astype(np.float64)
    counts = np.zeros((P.shape[1], CES_BINS), dtype=np.int64)
    for s in range(0, P.shape[0], chunk):
        counts += _cell_counts(P[s : s + chunk].astype(np.float64), lo, hi)
    return lo, hi, counts / P.shape[0]


def _draw_groups(n_free: int, rng: np.random.Generator, count: int = CES_CANDIDATES) -> np.ndarray:
    """``count`` groups of CES_STEP distinct positions in ``range(n_free)``."""
    g = rng.integers(0, n_free, size=(count, CES_STEP))
    while True:
        s = np.sort(g, axis=1)
        dup = (s[:, 1:] == s[:, :-1]).any(axis=1)
        if not dup.any():
            return g
        g[dup] = rng.integers(0, n_free, size=(int(dup.sum()), CES_STEP))


def ces_select(
    probs: np.ndarray, budget: int, rng: np.random.Generator, objective: str = "laf"
) -> np.ndarray:
    """Indices chosen by CES guided by one model's outputs ``probs`` (m, K) (docs/laf.md, reading
    R8).

    Starts from 10 random inputs and adds, ``floor((budget-10)/5)`` times, one of 30 random
    groups of 5 unselected inputs.

    ``objective='laf'`` (default, the LaF adaptation, ``conditional_sample`` of the LaF reference
    code): the group minimising ``-sum H(G) log2 H(S)`` with ``log2 0 := 0``, each histogram on
    its own range.

    ``objective='original'`` (the original CES, Li et al. FSE 2019, ``selectsample`` of their
    code): every histogram uses the cells of the whole test set T (edges from T's per-column
    min/max), and the group minimising the divergence ``ces_kl(H(S u G), H(T))`` of the grown
    selection from T is added, but only if it lowers the divergence of the current selection;
    otherwise a random group is added. Deviations from that code, kept from the LaF adaptation:
    5 cells per column (their code: 19 intervals, the maximum dropped), candidates
    drawn from the unselected inputs only (theirs may repeat inputs), softmax outputs instead of
    last-hidden-layer neurons.

    ``probs`` may be float32; only the rows a step needs are converted to float64. The result is
    in selection order, so its prefixes are the selections of smaller budgets with the same stream.
    """
    P = np.asarray(probs)
    m = P.shape[0]
    if budget > m:
        raise InfeasibleBudget(f"CES: budget {budget} exceeds the {m} test inputs")
    if budget < CES_INIT:
        raise InfeasibleBudget(f"CES: budget {budget} is below the initial sample of {CES_INIT}")
    if objective not in ("laf", "original"):
        raise ValueError(f"CES objective must be 'laf' or 'original', got {objective!r}")
    chosen = list(rng.choice(m, size=CES_INIT, replace=False))
    free = np.ones(m, dtype=bool)
    free[chosen] = False
    if objective == "laf":
        # H(S) kept up to date instead of rebuilt: a column's counts are added to while its
        # range (hence its cells) is unchanged and recounted when the range grows; integer
        # counts, so H(S) is exactly ces_histogram(P[chosen]).
        steps = (budget - CES_INIT) // CES_STEP
        s_vals = np.empty((CES_INIT + CES_STEP * steps, P.shape[1]))
        s_vals[:CES_INIT] = P[chosen]
        s_lo, s_hi = s_vals[:CES_INIT].min(axis=0), s_vals[:CES_INIT].max(axis=0)
        s_counts = _cell_counts(s_vals[:CES_INIT], s_lo, s_hi)
    if objective == "original":
        lo, hi, h_t = ces_test_histogram(P)
        counts = _cell_counts(P[chosen].astype(np.float64), lo, hi)  # (K, 5), additive
        current = ces_kl(counts / len(chosen), h_t)
    for _ in range((budget - CES_INIT) // CES_STEP):
        pool = np.flatnonzero(free)
        groups = pool[_draw_groups(pool.size, rng)]  # (30, 5)
        if objective == "laf":
            size = len(chosen)
            log_hs = _log2_or_zero(s_counts / size)  # (K, 5) = log2 H(S)
            h_g = ces_histogram(P[groups])  # (30, K, 5)
            ce = -(h_g * log_hs).sum(axis=(1, 2))
            best = groups[int(np.argmin(ce))]
            new = P[best].astype(np.float64)
            s_vals[size : size + CES_STEP] = new
            lo, hi = np.minimum(s_lo, new.min(axis=0)), np.maximum(s_hi, new.max(axis=0))
            moved = (lo != s_lo) | (hi != s_hi)
            keep = ~moved
            s_counts[keep] += _cell_counts(new[:, keep], s_lo[keep], s_hi[keep])
            if moved.any():
                grown = s_vals[: size + CES_STEP, moved]
                s_counts[moved] = _cell_counts(grown, lo[moved], hi[moved])
            s_lo, s_hi = lo, hi
        else:
            size = len(chosen) + CES_STEP
            grown = counts + _cell_counts(P[groups].astype(np.float64), lo, hi)  # (30, K, 5)
            kl = ces_kl(grown / size, h_t)
            i = int(np.argmin(kl))
            # No candidate improves on the current selection: a random group instead.
            best = groups[i] if kl[i] < current else pool[_draw_groups(pool.size, rng, 1)[0]]
            counts = counts + _cell_counts(P[best].astype(np.float64), lo, hi)
            current = ces_kl(counts / size, h_t)
        chosen.extend(best.tolist())
        free[best] = False
    return np.asarray(chosen, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# CRC (paper section 4.4; docs/laf.md, reading R11)
# ---------------------------------------------------------------------------------------------


def crc_scores(max_probs: np.ndarray, mode: str = "mean") -> np.ndarray:
    """CRC scores from the max softmax probability of every model, ``max_probs`` (m, n).

    ``mean``: mean max-probability per model; ``pairwise``: number of other models beaten on the
    majority of inputs (higher max-probability on more than half of them).
    """
    mp = np.asarray(max_probs, dtype=np.float64)
    if mode == "mean":
        return mp.mean(axis=0)
    if mode == "pairwise":
        m = mp.shape[0]
        wins = (mp[:, :, None] > mp[:, None, :]).sum(axis=0)  # (n, n): j beats j' on #inputs
        return (wins > m / 2).sum(axis=1).astype(np.float64)
    raise ValueError(f"CRC mode must be 'mean' or 'pairwise', got {mode!r}")

