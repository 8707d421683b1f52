"""HDBSCAN with the ``hdbscan`` package's own labels, faster in high dimension (docs/pace.md,
reading R4).

For more than 60 features ``hdbscan.HDBSCAN(algorithm='best')`` takes ``prims_kdtree``: core
distances from a KD-tree query (slow in 128-d) and Prim's algorithm on the mutual-reachability
graph with one scalar distance per pair (O(N^2 D) without BLAS). This module computes the same
minimum spanning tree, edge for edge and bit for bit, and hands it to the package's own
``label`` / ``_tree_to_labels`` / ``outlier_scores``, so labels and GLOSH scores are the
package's. Speed comes from BLAS in single precision: squared distances ``|a|^2 + |b|^2 - 2
a.b`` of the centred rows rounded to float32 (``_Filter``, which states the rounding bound)
decide every comparison whose outcome is certain under that bound, and only the remaining
pairs get the package's exact float64 distance (``sqrt`` of a left-to-right sum of squared differences,
reproduced with ``cumsum``). Prim's tie-breaking (first index wins, strict ``<`` updates) is the
package's ``mst_linkage_core_vector``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

#: hdbscan's 'best' algorithm switches from Boruvka to Prim's above this many features.
PRIMS_MIN_FEATURES = 61
_EPS = np.finfo(np.float64).eps
_EPS32 = float(np.finfo(np.float32).eps)


def _exact(diff: np.ndarray) -> np.ndarray:
    """``sqrt(sum_j diff_j^2)`` summed left to right, as hdbscan's / scikit-learn's Cython
    ``euclidean_dist`` (``cumsum`` along a row is sequential, unlike numpy's pairwise ``sum``)."""
    if diff.shape[1] == 0:
        return np.zeros(len(diff))
    return np.sqrt(np.cumsum(diff * diff, axis=1)[:, -1])


def _tol2(sq_a: np.ndarray | float, sq_b: np.ndarray | float, d: int) -> np.ndarray:
    """Bound on |float64 BLAS squared distance - sequential squared distance| (both within
    ~(d + 2) eps (|a|^2 + |b|^2) of the truth); a factor 8 of slack on top."""
    return 8.0 * (d + 2) * _EPS * (np.asarray(sq_a) + np.asarray(sq_b)) + 1e-300


@dataclass(frozen=True)
class _Filter:
    """Single-precision copy of the rows for the BLAS filter, with its error bound.

    ``y`` is ``x`` centred on its column means and rounded to float32; ``sy`` the squared norms
    of those float32 rows (in float64, so exact to float64 rounding). Then ``sy_a + sy_b - 2
    y_a.y_b`` (the dot in float32) is within ``tol(a, b) = K (sy_a + sy_b) + _tol2(sx_a + sy_a,
    sx_b + sy_b)`` of the squared distance that hdbscan computes, with ``K = 4 (d + 4) eps32``: rounding the
    centred rows to float32 moves the squared distance by at most ``(2 u + u^2) 2 (sy_a +
    sy_b)`` (``u = eps32 / 2``), a float32 dot of ``d`` terms is within ``gamma_d |y_a| |y_b|``
    (any summation order, FMA or not), and ``_tol2`` (in both rows' norms) covers the float64
    centring, the float64 arithmetic of the test and hdbscan's own sequential rounding; ``K`` carries a factor of about
    8 of slack over the sum. Centring keeps the norms, hence the bound, small for offset data.
    """

    y: np.ndarray
    sy: np.ndarray
    sx: np.ndarray
    k: float

    @classmethod
    def of(cls, x: np.ndarray) -> _Filter:
        y = (x - x.mean(axis=0)).astype(np.float32)
        yd = y.astype(np.float64)
        sy = np.einsum("ij,ij->i", yd, yd)
        sx = np.einsum("ij,ij->i", x, x)
        return cls(y, sy, sx, 4.0 * (x.shape[1] + 4) * _EPS32)

    def tol(self, a: np.ndarray | int, b: np.ndarray | int | float, sy_b=None, sx_b=None) -> np.ndarray:
        """Error bound for pairs (rows ``a``, rows ``b``); ``sy_b``/``sx_b`` override b's norms."""
        syb = self.sy[b] if sy_b is None else sy_b
        sxb = self.sx[b] if sx_b is None else sx_b
        return self.k * (self.sy[a] + syb) + _tol2(self.sx[a] + self.sy[a], sxb + syb, self.y.shape[1])


def core_distances(x: np.ndarray, k: int, block: int = 256, margin: int = 8) -> np.ndarray:
    """Distance of every row to its ``k``-th nearest row counting itself (``k = min_samples +
    1``), equal to ``KDTree.query(x, k)[0][:, -1]``: a float32 BLAS product shortlists ``k +
    margin`` candidates, exact distances rank them; a row whose shortlist cannot be proven
    complete under ``_Filter``'s bound is done in full."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    n, d = x.shape
    k = int(min(k, n))
    f = _Filter.of(x)
    sy32 = f.sy.astype(np.float32)
    out = np.empty(n)
    c = int(min(n, k + margin))
    for s in range(0, n, block):
        rows = np.arange(s, min(n, s + block))
        d2 = f.y[rows] @ f.y.T  # ranking within a row needs |b|^2 - 2 a.b only
        d2 *= -2.0
        d2 += sy32[None, :]  # float32: two more roundings, within 2 eps32 (sy_a + max sy)
        if c < n:
            part = np.argpartition(d2, c, axis=1)
            cand = part[:, :c]
            nxt = d2[np.arange(len(rows)), part[:, c]] + f.sy[rows]  # (c+1)-th smallest
            nxt -= 2.0 * _EPS32 * (f.sy[rows] + f.sy.max())
        else:
            cand = np.broadcast_to(np.arange(n), (len(rows), n))
            nxt = np.full(len(rows), np.inf)
        ex = _exact((x[rows][:, None, :] - x[cand]).reshape(-1, d)).reshape(len(rows), -1)
        kth = np.partition(ex, k - 1, axis=1)[:, k - 1]
        # complete iff every point outside the shortlist is provably farther than the k-th
        bad = nxt - f.tol(rows, 0, f.sy.max(), f.sx.max()) <= kth * kth
        out[rows] = kth
        for r in np.flatnonzero(bad):
            # every row within kth of row i has its lower bound <= kth^2 (kth is the k-th
            # distance within the shortlist, >= the true k-th): exact distances for those only
            # (in high dimension the shortlist's margin is often too thin to prove complete,
            # while the bound still excludes most rows)
            i = rows[r]
            lo = (d2[r].astype(np.float64) + f.sy[i] - 2.0 * _EPS32 * (f.sy[i] + f.sy.max())
                  - f.tol(i, slice(None)))
            cand = np.flatnonzero(lo <= kth[r] * kth[r])
            out[i] = np.partition(_exact(x[i] - x[cand]), k - 1)[k - 1]
    return out


def prim_mst(x: np.ndarray, core: np.ndarray, compact_every: int = 256) -> np.ndarray:
    """Minimum spanning tree of the mutual-reachability graph, identical to hdbscan's
    ``mst_linkage_core_vector(x, core, euclidean, alpha=1)``: rows (source, new node, weight)
    in Prim's order from node 0.

    Per step one float32 matrix-vector product bounds every remaining node's distance to the
    new tree node from below (``_Filter``); only nodes whose bound does not exceed their current
    distance to the tree (``right``) can be updated, and only those get exact distances. The
    test is folded into one comparison: ``y_r.y_c - h_r >= p_c / 2`` with ``p = sy (1 - K) -
    K64 (sx + sy)`` and ``h = (p - right^2) / 2`` kept per node (``+inf`` once in the tree)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    n, d = x.shape
    out = np.zeros((max(n - 1, 0), 3))
    if n < 2:
        return out
    f = _Filter.of(x)
    k64 = 8.0 * (d + 2) * _EPS
    sxy = f.sx + f.sy
    p_all = f.sy * (1.0 - f.k) - k64 * sxy  # d^2 >= p_a + p_b - 2 y_a.y_b
    q_all = f.sy * (1.0 + f.k) + k64 * sxy  # d^2 <= q_a + q_b - 2 y_a.y_b
    idx = np.arange(1, n)  # nodes not yet in the tree, ascending
    yr, p, q, cr = f.y[idx], p_all[idx], q_all[idx], core[idx]
    right = np.full(len(idx), np.inf)  # current_distances
    h = np.full(len(idx), -np.inf)  # (p - right^2) / 2; +inf once a node has joined
    src = np.zeros(len(idx), dtype=np.int64)  # current_sources
    grow = 1.0 + 4.0 * _EPS  # rounds right^2 up, so h errs low (more candidates, never fewer)
    cur = 0
    done_since = 0
    for i in range(n - 1):
        dot = yr @ f.y[cur]
        j = np.flatnonzero(dot - h >= 0.5 * p_all[cur])  # maybe closer than ``right``
        if len(j):
            m = np.maximum(cr[j], core[cur])
            e = np.flatnonzero(q[j] - 2.0 * dot[j] >= m * m - q_all[cur])  # d may exceed m
            if len(e):
                m[e] = np.maximum(m[e], _exact(x[cur] - x[idx[j[e]]]))
            u = m < right[j]  # m is now the mutual reachability distance
            ju, mu = j[u], m[u]
            right[ju] = mu
            src[ju] = cur
            h[ju] = 0.5 * (p[ju] - mu * mu * grow)
        new = int(np.argmin(right))  # first minimum: hdbscan's strict '<' scan
        out[i] = (src[new], idx[new], right[new])
        cur = int(idx[new])
        right[new] = np.inf
        h[new] = np.inf
        done_since += 1
        if done_since >= compact_every and i < n - 2:
            keep = h < np.inf
            idx, yr, p, q, cr = idx[keep], yr[keep], p[keep], q[keep], cr[keep]
            right, h, src = right[keep], h[keep], src[keep]
            done_since = 0
    return out


def hdbscan_prims(
    x: np.ndarray, min_cluster_size: int, min_samples: int
) -> tuple[np.ndarray, np.ndarray]:
    """(labels, GLOSH outlier scores) as ``hdbscan.HDBSCAN(min_cluster_size, min_samples)
    .fit(x)`` with every other parameter at its default, for ``x`` with > 60 columns."""
    # deferred: hdbscan imports scikit-learn (seconds); process.py imports this module at its top
    from hdbscan._hdbscan_linkage import label
    from hdbscan._hdbscan_tree import outlier_scores
    from hdbscan.hdbscan_ import _tree_to_labels

    x = np.ascontiguousarray(x, dtype=np.float64)
    n = len(x)
    ms = max(1, min(n - 1, int(min_samples)))
    core = core_distances(x, ms + 1)

    # Prim's does one small matrix-vector product per node: BLAS threads only add a barrier
    # per call (measured 1.1 s single-threaded vs 45+ s with 2 threads on a loaded 2-core host)
    with threadpool_limits(1, user_api="blas"):
        mst = prim_mst(x, core)
    mst = mst[np.argsort(mst.T[2]), :]
    slt = label(mst)
    labels, _prob, _stab, condensed, _slt = _tree_to_labels(
        x, slt, int(min_cluster_size), cluster_selection_method="eom",
        allow_single_cluster=False, match_reference_implementation=False,
        cluster_selection_epsilon=0.0,
    )
    return np.asarray(labels, dtype=np.int64), np.asarray(outlier_scores(condensed), dtype=np.float64)
