"""Exact n x K transportation with unit supplies (COT's optimal transport, docs/methods.md, reading R5).

Problem: maximise ``sum_i P[i, k_i]`` over assignments of the n samples to K classes with
``#{i: k_i = k} = counts[k]`` (= ``ot.emd(ones(n), counts, 1 - P)``, integral).

Solver, in two parts:

1. A feasible start: every class keeps its ``counts[k]`` best argmax holders; the remaining samples
   fill the remaining places in rounds, each sample asking for its best class with places left
   and each class taking its best askers (``_fill``; at most K rounds, vectorised). Where the
   repair from it is cut off, the former start is tried: the remaining samples assigned among
   themselves by ``scipy.optimize.linear_sum_assignment`` (|U| x |U|, cubic; on a corrupted test
   set most samples are left over, so that start cost more than the repair it saved).
2. An exact optimality certificate on the FULL matrix, with repair. An assignment is optimal iff
   the residual graph has no negative cycle; contracted to the K classes, the edge k -> k' costs
   ``W[k, k'] = min_{i: k_i = k} (P[i, k] - P[i, k'])`` (moving that sample from k to k'), and
   every residual cycle maps to a cycle of this graph of no greater cost (and back). Bellman-Ford
   on W (K x K, vectorised) either finds potentials with ``W[k, k'] + d_k - d_k' >= -tol`` for every
   edge (so no cycle costs less than ``-K tol``: the assignment is optimal up to ``n tol`` in total)
   or a negative cycle, which is cancelled (each sample on it moves one class on), and W rebuilt.

``tol`` defaults to 1e-13 (the objective is a sum of n values in [0, 1]): the total differs from the
exact optimum by at most ``n * tol``, far below the reported precision. Exact cost ties may give a
different optimal vertex than POT's network simplex (same total, other per-sample costs).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

TOL = 1e-13


def _greedy(P: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each sample at its argmax class; per class keep the ``counts[k]`` largest values (-1 for
    the others)."""
    n = len(P)
    k = P.argmax(axis=1)
    v = P[np.arange(n), k]
    order = np.lexsort((-v, k))
    ks = k[order]
    first = np.r_[0, np.flatnonzero(ks[1:] != ks[:-1]) + 1]
    rank = np.arange(n) - np.repeat(first, np.diff(np.r_[first, n]))
    keep = rank < counts[ks]
    a = np.full(n, -1, dtype=np.int64)
    a[order[keep]] = ks[keep]
    return a


def _class_edges(P: np.ndarray, a: np.ndarray, K: int) -> np.ndarray:
    """W[k, k'] = min over samples i in class k of P[i, k] - P[i, k'] (inf for empty classes)."""
    order = np.argsort(a, kind="stable")
    ks = a[order]
    X = P[order]
    np.subtract(X[np.arange(len(a)), ks][:, None], X, out=X)
    first = np.r_[0, np.flatnonzero(ks[1:] != ks[:-1]) + 1]
    W = np.full((K, K), np.inf)
    W[ks[first]] = np.minimum.reduceat(X, first, axis=0)
    return W


def _negative_cycles(Wr: np.ndarray, d: np.ndarray, act: np.ndarray,
                     tol: float) -> tuple[list[list[int]], np.ndarray]:
    """Bellman-Ford on the dense weights Wr (K x K) from the labels ``d`` (updated in place; any
    start is valid, e.g. the last pass's), relaxing only from the nodes that improved in the last
    sweep (first sweep: from ``act``, the rows that changed since ``d`` last settled): the cycles of the predecessor graph (node-disjoint, each negative by the Bellman-Ford
    invariant) as soon as there are any, with the nodes still to relax from; or [] when no label improves by more than ``tol`` (then
    ``Wr[k, k'] + d_k - d_k' >= -tol`` on every edge: no cycle weighs less than ``-K tol``)."""
    K = len(Wr)
    pred = np.full(K, -1, dtype=np.int64)
    for _ in range(4 * K + 4):
        T = Wr[act]
        T += d[act, None]
        best = T.min(axis=0)  # a column minimum is a row-wise SIMD reduction; argmin is not
        upd = np.flatnonzero(best < d - tol)
        if not upd.size:
            return [], act[:0]
        d[upd] = best[upd]
        pred[upd] = act[T[:, upd].argmin(axis=0)]  # first minimiser, as argmin over all columns
        act = upd
        cyc = _pred_cycles(pred)
        if cyc:
            return cyc, act
    raise RuntimeError("COT transport: Bellman-Ford did not settle")  # pragma: no cover


def _pred_cycles(pred: np.ndarray) -> list[list[int]]:
    """The cycles of the functional graph v -> pred[v], each in forward order (every node's
    successor is the next one: the edge pred[c] -> c)."""
    K = len(pred)
    p = pred.copy()
    steps = 1
    while steps < K:
        p = np.where(p >= 0, p[np.maximum(p, 0)], -1)
        steps *= 2
    seen: set[int] = set()
    out = []
    for s in np.unique(p[p >= 0]).tolist():
        if s in seen:
            continue
        cyc = [s]
        v = int(pred[s])
        while v != s:
            cyc.append(v)
            v = int(pred[v])
        seen.update(cyc)
        out.append(cyc[::-1])
    return out


def _certify(P: np.ndarray, a: np.ndarray, tol: float, max_passes: int) -> np.ndarray | None:
    """Cancel negative cycles of the class graph until none is left (returns the optimal
    assignment) or ``max_passes`` Bellman-Ford passes were used (returns None)."""
    K = P.shape[1]
    W = _class_edges(P, a, K)
    np.fill_diagonal(W, np.inf)
    d = np.zeros(K)
    act = np.arange(K)
    for _ in range(max_passes):
        cycles, act = _negative_cycles(W, d, act, tol)
        if not cycles:
            return a
        touched = []
        for cyc in cycles:
            nxt = cyc[1:] + cyc[:1]
            if sum(W[u, v] for u, v in zip(cyc, nxt, strict=True)) >= 0:
                continue  # rounding: not a real improvement
            movers = []
            for u, v in zip(cyc, nxt, strict=True):
                mem = np.flatnonzero(a == u)
                movers.append(mem[np.argmin(P[mem, u] - P[mem, v])])
            for i, v in zip(movers, nxt, strict=True):
                a[i] = v
            touched += cyc
        if not touched:
            return None  # only rounding-level cycles left: not certified, the caller uses POT
        act = np.union1d(act, touched)
        for u in touched:
            mem = np.flatnonzero(a == u)
            W[u] = (P[mem, u][:, None] - P[mem]).min(axis=0)
            W[u, u] = np.inf
    return None


def _fill(P: np.ndarray, a: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Complete the partial assignment ``a`` (-1 = free) to a feasible one: in rounds, every free
    sample asks for its best class with places left, and each class takes its best askers up to
    its places left (a class that fills up leaves the next round's choices)."""
    K = P.shape[1]
    cap = counts - np.bincount(a[a >= 0], minlength=K)
    U = np.flatnonzero(a < 0)
    while len(U):
        X = np.where(cap[None, :] > 0, P[U], -np.inf)
        k = X.argmax(axis=1)
        v = X[np.arange(len(U)), k]
        order = np.lexsort((-v, k))
        ks = k[order]
        first = np.r_[0, np.flatnonzero(ks[1:] != ks[:-1]) + 1]
        rank = np.arange(len(ks)) - np.repeat(first, np.diff(np.r_[first, len(ks)]))
        keep = rank < cap[ks]
        a[U[order[keep]]] = ks[keep]
        cap -= np.bincount(ks[keep], minlength=K)
        U = np.flatnonzero(a < 0)
    return a


def _start(P: np.ndarray, counts: np.ndarray, fill: str = "rounds") -> np.ndarray:
    """A feasible start: each class keeps its ``counts[k]`` best argmax holders; the others fill
    the remaining places by :func:`_fill` (``fill='rounds'``) or by an exact assignment among
    themselves (``'lsa'``: linear_sum_assignment)."""
    n, K = P.shape
    Pm = P if counts.min() > 0 else np.where(counts[None, :] > 0, P, -np.inf)
    a = _greedy(Pm, counts)
    U = np.flatnonzero(a < 0)
    if not len(U):
        return a
    if fill == "rounds":
        return _fill(P, a, counts)
    free = np.repeat(np.arange(K), counts - np.bincount(a[a >= 0], minlength=K))
    r, c = linear_sum_assignment(P[U][:, free], maximize=True)
    a[U[r]] = free[c]
    return a


def assign(P: np.ndarray, counts: np.ndarray, *, tol: float = TOL,
           max_passes: int = 5000) -> np.ndarray | None:
    """Optimal class per sample (n,) for the unit-supply transport (module docstring), or None if
    the repair needs more than ``max_passes`` Bellman-Ford passes from either start (the caller
    then uses POT)."""
    P = np.ascontiguousarray(P, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    a = _certify(P, _start(P, counts), tol, max_passes)
    return a if a is not None else _certify(P, _start(P, counts, "lsa"), tol, max_passes)
