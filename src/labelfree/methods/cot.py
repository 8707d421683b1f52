"""COT and COTT (Lu et al., NeurIPS 2023), docs/methods.md, reading R5;
luyuzhe111/COT@392c0ff ``run_estimation.py::main`` (branches COT/COTT), ``utils.py::compute_cott``,
``torch_datasets/configs.py::sample_label_dist``.

The authors solve an n x n optimal transport (label multiset's one-hots vs softmax rows, uniform
marginals) with POT's ``ot.emd``. Its n label points take only K distinct values, so it is the
n x K transportation problem ``ot.emd(ones(n), counts, 1 - P)`` (docs/methods.md, reading R5):
same optimal cost, and POT's network simplex returns an integral vertex (each sample sent to one
class), so per-sample costs equal those of the n x n optimum except under exact cost ties
(the tests check both against the n x n solutions). The default solver is
``'certified'`` (``_transport``: greedy start, negative-cycle cancelling on the K-class graph until
Bellman-Ford proves optimality; POT if that stalls), tested equal to ``ot.emd``: same assignment on
generic rows, same total under ties; docs/methods.md ("Speed") points at the timings of both on
the same models. ``solver='emd'`` is POT's network simplex on the same n x K problem. Cost per
call: O(n K) memory. ``batch_size`` (default 10000, the authors' constant) bounds n
per batch; smaller values are a departure from the code, to be reported where used.
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass

import numpy as np

from labelfree.methods import _transport
from labelfree.methods.arrays import MethodInputError

BATCH = 10000


def label_distribution(y_src: np.ndarray, K: int, kind: str = "empirical") -> np.ndarray:
    """d (K,): empirical source label frequencies (absent classes 0) or uniform 1/K (reading R5)."""
    if kind == "uniform":
        return np.full(K, 1.0 / K)
    if kind != "empirical":
        raise MethodInputError(f"COT label_dist must be 'empirical' or 'uniform', got {kind!r}")
    y = np.asarray(y_src, dtype=np.int64)
    return np.bincount(y, minlength=K)[:K] / len(y)


def label_counts(d: np.ndarray, n: int, rng: random.Random) -> np.ndarray:
    """Counts of the label multiset of size n (reading R5): ``int(d_k n)`` copies of k, then the
    remainder drawn by ``rng.choices(range(K), weights=d, k=r)`` (the authors' Python RNG)."""
    d = np.asarray(d, dtype=np.float64)
    K = len(d)
    counts = np.array([int(dk * n) for dk in d], dtype=np.int64)
    r = n - int(counts.sum())
    if r > 0:
        extra = rng.choices(range(K), weights=d.tolist(), k=r)
        counts += np.bincount(extra, minlength=K)
    return counts


def transport_assign(P: np.ndarray, counts: np.ndarray, *, solver: str = "certified") -> np.ndarray:
    """Optimal class of every sample: argmin sum_i (1 - P[i, k_i]) s.t. #{i: k_i = k} = counts[k].

    The n x K transportation problem (supplies 1 per sample, demands ``counts``, cost 1 - P)
    (reading R5, equivalent fast path of the authors' n x n ``ot.emd``). ``solver='emd'``: POT's
    network simplex ``ot.emd``; ``'certified'`` (default): greedy start, then negative cycles of
    the K-class graph cancelled until Bellman-Ford certifies optimality
    (``labelfree.methods._transport``; total within n 1e-13 of the optimum), POT if that stalls.
    Returns (n,) int64.
    """
    P = np.asarray(P, dtype=np.float64)
    n, K = P.shape
    counts = np.asarray(counts, dtype=np.int64)
    if len(counts) != K or counts.min() < 0 or counts.sum() != n:
        raise MethodInputError(f"COT: label multiset has {counts.sum()} labels in {len(counts)} "
                               f"classes for {n} samples in {K}")
    if np.count_nonzero(counts) == 1:
        return np.full(n, int(np.flatnonzero(counts)[0]), dtype=np.int64)
    if solver == "certified":
        k = _transport.assign(P, counts)
        if k is not None:
            return k
    elif solver != "emd":
        raise MethodInputError(f"COT solver must be 'certified' or 'emd', got {solver!r}")
    import ot  # deferred: POT imports torch (seconds per job start); only solver='emd' needs it

    G, log = ot.emd(np.ones(n), counts.astype(np.float64), 1.0 - P, numItermax=100_000_000,
                    log=True)
    if log["result_code"] != 1:
        raise RuntimeError(f"COT: ot.emd did not reach the optimum: {log['warning']}")
    k = G.argmax(axis=1)
    if not np.all(G[np.arange(n), k] > 0.5):  # network simplex vertices are integral
        raise RuntimeError("COT: ot.emd returned a fractional plan")
    return k.astype(np.int64)


def _matched_costs(P: np.ndarray, counts: np.ndarray, solver: str = "certified") -> np.ndarray:
    """Per-sample cost ``1 - P[i, k_i]`` of the optimal transport (halved L1 cost, reading R5)."""
    k = transport_assign(P, counts, solver=solver)
    return 1.0 - P[np.arange(len(P)), k]


def _batches(n: int, seed: int, batch_size: int) -> list[np.ndarray | None]:
    """One batch (None = all rows) if n <= batch_size; else ceil(n / b) batches of b rows drawn
    with replacement by ``random.Random(seed).choices`` (reading R5, multi-batch)."""
    if n <= batch_size:
        return [None]
    g = random.Random(seed)
    return [np.asarray(g.choices(range(n), k=batch_size)) for _ in range(-(-n // batch_size))]


@dataclass(frozen=True)
class CotResult:
    """COT error (fraction), accuracy = 1 - error, and the per-sample matched costs (reading R5)."""

    error: float
    accuracy: float
    costs: np.ndarray


def target_costs(
    P: np.ndarray, y_src: np.ndarray, *, label_dist: str = "empirical", seed: int = 10,
    batch_size: int = BATCH, solver: str = "certified",
) -> list[np.ndarray]:
    """Per batch, the matched costs of the target rows against a fresh label multiset (reading
    R5): the transports COT and COTT both solve on the target (same batches, multisets and
    solver), so one call serves both (:func:`cot_from_costs`, :func:`cott_from_costs`)."""
    P = np.asarray(P, dtype=np.float64)
    n, K = P.shape
    d = label_distribution(y_src, K, label_dist)
    costs = []
    for idx in _batches(n, seed, batch_size):
        Pb = P if idx is None else P[idx]
        costs.append(_matched_costs(Pb, label_counts(d, len(Pb), random.Random(seed)), solver))
    return costs


def cot_from_costs(costs: list[np.ndarray]) -> CotResult:
    """COT from :func:`target_costs`: per batch the mean matched cost, errors averaged."""
    err = float(np.mean([float(c.mean()) for c in costs]))
    return CotResult(err, 1.0 - err, np.concatenate(costs))


def cott_threshold(
    P_src: np.ndarray, y_src: np.ndarray, K: int, *, threshold_rule: str = "code",
    batch_size: int = BATCH, solver: str = "certified",
) -> float:
    """COTT's threshold tau (reading R5) from the source OT with the true labels (unhalved costs):
    ``sort(-2 c)[n_inc - 1]`` (``'code'``) or ``[n_inc]`` (``'exact'``). It reads the source set
    only, so a zoo's target sets share it per model."""
    Ps = np.asarray(P_src, dtype=np.float64)
    ys = np.asarray(y_src, dtype=np.int64)
    if len(Ps) > batch_size:
        import torch  # deferred: seconds per job start; only a source above batch_size needs it

        torch.manual_seed(0)
        perm = torch.randperm(len(Ps)).numpy()[:batch_size]
        Ps, ys = Ps[perm], ys[perm]
    s = np.sort(-2.0 * _matched_costs(Ps, np.bincount(ys, minlength=K), solver))
    n_inc = int(np.sum(Ps.argmax(axis=1) != ys))
    if threshold_rule == "code":
        if n_inc == 0:
            warnings.warn("COTT: perfect source accuracy; index -1 wraps (docs/methods.md, reading R5)",
                          stacklevel=2)
        return s[n_inc - 1]
    if threshold_rule == "exact":
        return s[n_inc] if n_inc < len(s) else np.inf
    raise MethodInputError(f"COTT threshold_rule must be 'code' or 'exact', got {threshold_rule!r}")


def cott_from_costs(costs: list[np.ndarray], t: float) -> CotResult:
    """COTT from :func:`target_costs` and :func:`cott_threshold`: per batch the fraction of
    target matched costs strictly above tau (``-2 c < t``), errors averaged."""
    err = float(np.mean([float(np.mean(-2.0 * c < t)) for c in costs]))
    return CotResult(err, 1.0 - err, np.concatenate(costs))


def cot(
    P: np.ndarray, y_src: np.ndarray, *, label_dist: str = "empirical", seed: int = 10,
    batch_size: int = BATCH, solver: str = "certified",
) -> CotResult:
    """COT: the W1 transport cost between the label multiset and the target softmax rows (reading R5).

    Single batch when n <= 10000; otherwise ceil(n / 10000) batches of 10000 rows drawn with
    replacement (``random.Random(seed).choices``), each with a fresh multiset; errors averaged.
    The multiset RNG is re-seeded with ``seed`` before each multiset, as ``sample_label_dist`` does.
    """
    return cot_from_costs(target_costs(P, y_src, label_dist=label_dist, seed=seed,
                                       batch_size=batch_size, solver=solver))


def cott(
    P: np.ndarray, P_src: np.ndarray, y_src: np.ndarray, *, label_dist: str = "empirical",
    seed: int = 10, threshold_rule: str = "code", batch_size: int = BATCH, solver: str = "certified",
) -> CotResult:
    """COTT (reading R5): threshold tau from the source OT with the true labels (unhalved costs); the
    error is the fraction of target matched costs strictly above tau."""
    K = np.shape(P)[1]
    t = cott_threshold(P_src, y_src, K, threshold_rule=threshold_rule, batch_size=batch_size,
                       solver=solver)
    return cott_from_costs(target_costs(P, y_src, label_dist=label_dist, seed=seed,
                                        batch_size=batch_size, solver=solver), t)
