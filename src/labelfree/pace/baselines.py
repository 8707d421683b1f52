"""Baselines SRS, CES, CSS and the PACE variants of RQ5 (paper section 4.2; docs/pace.md,
readings R9-R11, R13).

Every function returns estimates for a list of budgets: an array (reps, len(budgets)) of the
estimate ``mean(score_i for i in sample)`` (or the stratified estimate for CSS), where
``score_i`` is ``correct_i`` (classification) or ``1 - sq_err_i`` (regression), reading R8.
"""

from __future__ import annotations

import numpy as np

from .allocate import hamilton
from .art import art_order
from .core import PaceFit
from .mmd import mmd_greedy


def _check_schedule(budgets: list[int], init: int, step: int, name: str) -> None:
    bad = [b for b in budgets if b < init or (b - init) % step]
    if bad:
        raise ValueError(
            f"{name}: budgets {bad} are not reachable from an initial {init} in steps of {step}"
        )


# ------------------------------------------------------------------------------------- SRS


def srs(
    scores: np.ndarray, budgets: list[int], reps: int, rng: np.random.Generator,
    allow_repeats: bool = False, init: int = 30, step: int = 5,
) -> np.ndarray:
    """Simple random sampling (docs/pace.md, reading R9), vectorised over repetitions.

    Default: without replacement (prefixes of one permutation per rep). ``allow_repeats``: the
    reference scheme (initial ``init`` draws, then rounds of ``step`` from fresh permutations).
    """
    scores = np.asarray(scores, dtype=np.float64)
    n_items = len(scores)
    bmax = max(budgets)
    if allow_repeats:
        _check_schedule(budgets, init, step, "srs")
        rounds = (bmax - init) // step
        keys = rng.random((reps, rounds + 1, n_items))
        first = np.argsort(keys[:, 0], axis=1)[:, :init]
        more = np.argsort(keys[:, 1:], axis=2)[:, :, :step].reshape(reps, -1)
        idx = np.concatenate([first, more], axis=1)
    else:
        if bmax > n_items:
            raise ValueError(f"srs: budget {bmax} exceeds the pool size {n_items}")
        idx = np.argsort(rng.random((reps, n_items)), axis=1)[:, :bmax]
    csum = np.cumsum(scores[idx], axis=1)
    b = np.asarray(budgets)
    return csum[:, b - 1] / b


# ------------------------------------------------------------------------------------- CES


def ces_bins(lhl: np.ndarray, n_edges: int = 20) -> np.ndarray:
    """Bin index (0..n_edges-2) of every (input, neuron): 19 equal bins between each neuron's
    min and max over the test set, numpy ``histogram`` semantics (last bin closed), reading R10."""
    x = np.asarray(lhl, dtype=np.float64)
    lo, hi = x.min(axis=0), x.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    nb = n_edges - 1
    b = np.floor((x - lo) / span * nb).astype(np.int64)
    return np.clip(b, 0, nb - 1)


class _CesState:
    """Running bin counts of the sample and the reference log-histograms."""

    def __init__(self, bins: np.ndarray, nb: int):
        self.bins = bins
        self.L = bins.shape[1]
        self.nb = nb
        onehot_counts = np.zeros((self.L, nb))
        np.add.at(onehot_counts, (np.tile(np.arange(self.L), len(bins)), bins.ravel()), 1.0)
        p = onehot_counts / len(bins)
        self.logp = np.log(np.maximum(p, 1e-10))
        self.flat = (np.arange(self.L)[None, :] * nb + bins)  # (N, L) flat bin ids

    def counts_of(self, idx: np.ndarray) -> np.ndarray:
        return np.bincount(self.flat[idx].ravel(), minlength=self.L * self.nb).astype(float)

    def obj(self, counts: np.ndarray, size: int) -> np.ndarray:
        """-mean KL(q||p) for counts of shape (..., L*nb)."""
        q = counts.reshape(*counts.shape[:-1], self.L, self.nb) / size
        logq = np.log(np.maximum(q, 1e-10))
        return (q * (self.logp - logq)).sum(axis=(-1, -2)) / self.L


def ces_objective(bins: np.ndarray, sample: np.ndarray, n_edges: int = 20) -> float:
    """obj(S) = -(1/L) sum_j KL(q_j || p_j) of a sample (index multiset), reading R10."""
    st = _CesState(bins, n_edges - 1)
    sample = np.asarray(sample)
    return float(st.obj(st.counts_of(sample), len(sample)))


def ces(
    scores: np.ndarray, bins: np.ndarray, budgets: list[int], reps: int,
    rng: np.random.Generator, init: int = 30, step: int = 5, candidates: int = 30,
    allow_repeats: bool = False, n_edges: int = 20, return_samples: bool = False,
):
    """Cross-entropy-based sampling of Li et al. (docs/pace.md, reading R10), ``reps``
    independent runs.

    Candidate batches are scored by updating running bin counts (O(step * L) per candidate).
    With ``return_samples`` also returns each rep's index sequence and its trace of
    ``(obj before, obj after, accepted)`` per round.
    """
    _check_schedule(budgets, init, step, "ces")
    scores = np.asarray(scores, dtype=np.float64)
    n_items = len(scores)
    st = _CesState(bins, n_edges - 1)
    bset = {b: j for j, b in enumerate(budgets)}
    out = np.zeros((reps, len(budgets)))
    samples, traces = [], []
    bmax = max(budgets)
    for r in range(reps):
        sample = list(rng.choice(n_items, size=min(init, n_items), replace=False))
        in_s = np.zeros(n_items, dtype=bool)
        in_s[sample] = True
        counts = st.counts_of(np.asarray(sample))
        if init in bset:
            out[r, bset[init]] = scores[sample].mean()
        trace = []
        while len(sample) < bmax:
            cur = st.obj(counts, len(sample))
            if allow_repeats:
                cand = np.stack([rng.choice(n_items, step, replace=False) for _ in range(candidates)])
            else:
                avail = np.flatnonzero(~in_s)
                keys = rng.random((candidates, len(avail)))
                cand = avail[np.argpartition(keys, step - 1, axis=1)[:, :step]]
            add = np.stack([st.counts_of(c) for c in cand])
            objs = st.obj(counts[None, :] + add, len(sample) + step)
            best = int(np.argmax(objs))
            accepted = bool(objs[best] > cur)
            if not accepted:
                pool = np.arange(n_items) if allow_repeats else np.flatnonzero(~in_s)
                batch = rng.choice(pool, step, replace=False)
                counts = counts + st.counts_of(batch)
            else:
                batch = cand[best]
                counts = counts + add[best]
            trace.append((float(cur), float(st.obj(counts, len(sample) + step)), accepted))
            sample.extend(int(i) for i in batch)
            in_s[batch] = True
            if len(sample) in bset:
                out[r, bset[len(sample)]] = scores[sample].mean()
        samples.append(np.asarray(sample))
        traces.append(trace)
    return (out, samples, traces) if return_samples else out


# ------------------------------------------------------------------------------------- CSS


def css_strata(confidence: np.ndarray, cuts: tuple[float, ...] = (0.8, 0.9)) -> np.ndarray:
    """Stratum of every input by descending confidence rank: 0 = top 80 %, 1 = next 10 %,
    2 = lowest 10 % (docs/pace.md, reading R11); ties broken by test-set index."""
    conf = np.asarray(confidence, dtype=np.float64)
    n = len(conf)
    order = np.lexsort((np.arange(n), -conf))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    edges = np.floor(np.asarray(cuts) * n + 1e-9).astype(np.int64)
    return np.searchsorted(edges, rank, side="right").astype(np.int64)


def css_sizes(n: int, alloc: tuple[float, ...], init: int = 30, step: int = 5) -> np.ndarray:
    """Per-stratum sample sizes at budget ``n``: the initial draw and each round are split by
    ``alloc`` (30 -> 6/12/12, 5 -> 1/2/2, reading R11)."""
    rounds = (n - init) // step
    return hamilton(init, np.asarray(alloc)) + rounds * hamilton(step, np.asarray(alloc))


def css(
    scores: np.ndarray, confidence: np.ndarray, budgets: list[int], reps: int,
    rng: np.random.Generator, cuts: tuple[float, ...] = (0.8, 0.9),
    alloc: tuple[float, ...] = (0.2, 0.4, 0.4), init: int = 30, step: int = 5,
    weights: tuple[float, ...] | None = None,
) -> np.ndarray:
    """Confidence-based stratified sampling (docs/pace.md, reading R11): acc_hat = sum_h W_h acc_h(sample) with
    population weights W_h = N_h / N (unbiased). ``weights`` replaces W (reading R11: the
    released surprise-coverage script's (0.1, 0.1, 0.8) with alloc (0.4, 0.4, 0.2); biased
    unless the weights equal the stratum shares)."""
    if weights is not None and len(weights) != len(cuts) + 1:
        raise ValueError(f"css: {len(weights)} weights for {len(cuts) + 1} strata")
    _check_schedule(budgets, init, step, "css")
    scores = np.asarray(scores, dtype=np.float64)
    strata = css_strata(confidence, cuts)
    n_items = len(scores)
    out = np.zeros((reps, len(budgets)))
    for h in range(len(cuts) + 1):
        members = np.flatnonzero(strata == h)
        if len(members) == 0:
            continue
        w = len(members) / n_items if weights is None else float(weights[h])
        sizes = np.minimum([css_sizes(b, alloc, init, step)[h] for b in budgets], len(members))
        if sizes.min() < 1:
            raise ValueError(f"css: stratum {h} gets no sample at some budget in {budgets}")
        perm = np.argsort(rng.random((reps, len(members))), axis=1)[:, : sizes.max()]
        csum = np.cumsum(scores[members][perm], axis=1)
        out += w * csum[:, sizes - 1] / sizes
    return out


# ------------------------------------------------------------------------ PACE variants (RQ5)


def pace_estimates(fit: PaceFit, scores: np.ndarray, budgets: list[int],
                   alpha: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """PACE estimate and realised size at every budget (deterministic, one row)."""
    est, size = [], []
    for b in budgets:
        sel = fit.select(b, alpha=alpha)
        est.append(scores[sel.indices].mean())
        size.append(sel.size)
    return np.asarray(est)[None, :], np.asarray(size)


def pace_group_random(fit: PaceFit, scores: np.ndarray, budgets: list[int], reps: int,
                      rng: np.random.Generator) -> np.ndarray:
    """PACE^g_rand: uniform random ``q_k`` items per group, ART for M as in PACE (reading R13)."""
    out = np.zeros((reps, len(budgets)))
    perms = [np.argsort(rng.random((reps, len(m))), axis=1) for m in fit.members]
    for j, b in enumerate(budgets):
        alloc = fit.allocation(b)
        tot = np.zeros(reps)
        for m, p, q in zip(fit.members, perms, alloc.quotas, strict=True):
            tot += scores[m][p[:, :q]].sum(axis=1)
        art = fit.art[: alloc.n_minority]
        tot += scores[art].sum()
        out[:, j] = tot / (alloc.quotas.sum() + len(art))
    return out


def pace_minority_random(fit: PaceFit, scores: np.ndarray, budgets: list[int], reps: int,
                         rng: np.random.Generator) -> np.ndarray:
    """PACE^m_rand: MMD prototypes as in PACE, ``n_M`` uniform random items of M (reading R13)."""
    noise = fit.noise
    out = np.zeros((reps, len(budgets)))
    perm = np.argsort(rng.random((reps, len(noise))), axis=1) if len(noise) else None
    for j, b in enumerate(budgets):
        alloc = fit.allocation(b)
        tot = np.zeros(reps) + sum(
            scores[p[:q]].sum() for p, q in zip(fit.prototypes, alloc.quotas, strict=True)
        )
        if perm is not None and alloc.n_minority:
            tot += scores[noise][perm[:, : alloc.n_minority]].sum(axis=1)
        out[:, j] = tot / max(1, alloc.quotas.sum() + alloc.n_minority)
    return out


def pace_mmd(processed: np.ndarray, scores: np.ndarray, budgets: list[int],
             gamma: float = 0.026) -> np.ndarray:
    """PACE_mmd: no clustering, MMD-critic greedy over the whole processed set, first n."""
    order = mmd_greedy(processed, max(budgets), gamma)
    c = np.cumsum(scores[order])
    b = np.asarray(budgets)
    return (c[b - 1] / b)[None, :]


def pace_art(processed: np.ndarray, scores: np.ndarray, budgets: list[int], reps: int,
             rng: np.random.Generator) -> np.ndarray:
    """PACE_art: no clustering, max-min ART over the whole set from a uniform random first pick."""
    b = np.asarray(budgets)
    out = np.zeros((reps, len(b)))
    for r in range(reps):
        first = int(rng.integers(len(processed)))
        order = art_order(processed, max(budgets), first=first)
        out[r] = np.cumsum(scores[order])[b - 1] / b
    return out
