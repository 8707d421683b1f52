"""Reference mode against the authors' released code (issue 15).

Oracles below are our own transliterations of pace2019/pace
``mnist_cifar_imagenet_svhn/selection.py`` (``get_std1`` grows the ART picks, ``get_ds`` turns
group sizes into per-group counts), written loop by loop in the authors' order of floating-point
operations, so that a change of formula in ``labelfree.pace.allocate`` shows up.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from labelfree.pace.allocate import allocate
from labelfree.pace.art import art_order
from labelfree.pace.fast_hdbscan import core_distances, hdbscan_prims
from labelfree.pace.process import cluster, minmax

#: Budgets of the spec: Tables 2-3 (50..180/10), the reference scripts (30..180/5), Table 10.
SPEC_BUDGETS = sorted({*range(50, 190, 10), *range(30, 185, 5), *range(100, 1100, 100)})
ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)


def authors_allocation(n: int, alpha: float, sizes: list[int], n_noise: int):
    """(ART picks, per-group counts) that the authors' script realises, or None where it
    raises (an empty minority space, or its loop runs out of minority inputs)."""
    if n_noise == 0:
        return None  # np.argsort(-noise_score)[0] on an empty array
    len_noise = n * (1 - alpha)
    picks = 2  # first = max GLOSH, second = np.argmax(dis[first_noise])
    while picks < len_noise:
        if picks >= n_noise:
            return None  # mins == [] -> mins[0] raises IndexError
        picks += 1
    sample_size = n * alpha
    len_nonnoise = sum(sizes)
    counts = []
    for s in sizes:
        if s > (len_nonnoise / sample_size):
            counts.append(int(round(s / (len_nonnoise / sample_size))))
        else:
            counts.append(1)
    return picks, counts


def group_sizes(seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return rng.integers(20, 4000, size=rng.integers(2, 12)).tolist()


# ---- minority budget: the authors' while-loop in reference mode, the paper in exact mode -----
def test_alpha_07_while_loop_gives_one_more_art_pick():
    # 50 * (1 - 0.7) = 15.000000000000002 in floating point: the loop stops at 16
    assert 50 * (1 - 0.7) > 15
    assert authors_allocation(50, 0.7, [6000, 3000], 1000)[0] == 16
    assert allocate(50, np.array([6000, 3000]), 1000, 0.7, "reference").n_minority == 16
    # the paper's reading (1 - alpha) n = 15 stays the exact mode's
    assert allocate(50, np.array([6000, 3000]), 1000, 0.7, "exact").n_minority == 15


@pytest.mark.parametrize("seed", range(6))
def test_reference_equals_authors_code_for_every_spec_budget(seed):
    sizes = group_sizes(seed)
    for alpha in ALPHAS:
        for n in SPEC_BUDGETS:
            if n * alpha > sum(sizes):
                continue
            want = authors_allocation(n, alpha, sizes, n_noise=10_000)
            got = allocate(n, np.array(sizes), 10_000, alpha, "reference")
            assert (got.n_minority, got.quotas.tolist()) == want, (n, alpha, sizes)


@pytest.mark.parametrize("seed", range(4))
def test_reference_deficit_moves_to_groups_realising_the_codes_size(seed):
    """Where the authors' code has no selection (too few minority inputs), the deficit goes
    to the groups (spec 2.12 'cap and move deficit to groups') and the realised size is what
    their code realises on a pool with enough minority inputs."""
    sizes = group_sizes(seed)
    for alpha in ALPHAS:
        for n in SPEC_BUDGETS:
            if n * alpha > sum(sizes):
                continue
            picks, counts = authors_allocation(n, alpha, sizes, n_noise=10_000)
            for n_noise in (0, 1, picks - 1):
                if authors_allocation(n, alpha, sizes, n_noise) is not None:
                    continue
                got = allocate(n, np.array(sizes), n_noise, alpha, "reference")
                assert got.n_minority == n_noise
                assert got.size == picks + sum(counts), (n, alpha, n_noise)
                assert np.all(got.quotas >= np.minimum(counts, sizes))


def test_issue_15_example_realises_100():
    # issue 15: allocate(100, [5000, 3000, 1000], 5, 0.8, 'reference') used to select 85
    a = allocate(100, np.array([5000, 3000, 1000]), 5, 0.8, "reference")
    assert a.n_minority == 5 and a.size == 100
    assert a.quotas.tolist() == [52, 32, 11]  # (44, 27, 9) + Hamilton(15) = (8, 5, 2)


# ---- ART duplicate ordering (get_std1's loop, maxnum never updated) -------------------------
def authors_art(x: np.ndarray, first: int, m: int) -> list[int]:
    """Transliteration of get_std1's ART loop on 1-d points (distances |a - b|)."""
    dis = np.abs(x[:, None] - x[None, :])
    pre = [first, int(np.argmax(dis[first]))]
    while len(pre) < m:
        mins = []
        for i in range(len(x)):
            if i not in set(pre):
                mins.append((min(dis[i][j] for j in pre), i))
        pick = mins[0][1]
        for d, i in mins:
            if d > 0:
                pick = i
        pre.append(pick)
    return pre


@pytest.mark.parametrize(
    "pts,first",
    [
        ([0, 10, 1, 3, 3], 0),  # 2 becomes a duplicate of pick 4 only after 4 is picked
        ([0, 10, 0, 0], 0),  # zero-distance rows in ascending order
        ([5, 5, 5], 0),  # all duplicates: the second pick repeats the first
        ([2, 7, 2, 9, 7, 7, 0, 9, 4], 3),
    ],
)
def test_reference_art_duplicates_follow_the_authors_loop(pts, first):
    x = np.asarray(pts, dtype=float)
    m = len(x)
    want = authors_art(x, first, m)
    assert art_order(x[:, None], m, first=first, mode="reference").tolist() == want


def test_reference_art_hand_example():
    # by hand: picks 0, 1 (farthest); then last non-zero 4; point 3 now duplicates 4 -> 2, 3
    assert art_order(np.array([[0.0], [10], [1], [3], [3]]), 5, first=0, mode="reference").tolist() == [0, 1, 4, 2, 3]


@pytest.mark.parametrize("seed", range(5))
def test_reference_art_random_duplicates(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, size=25).astype(float)
    assert art_order(x[:, None], 25, first=3, mode="reference").tolist() == authors_art(x, 3, 25)


# ---- min-max: scikit-learn's MinMaxScaler (the authors' scaler), bit for bit -----------------
def test_minmax_is_sklearn_minmaxscaler_bit_for_bit():
    from sklearn.preprocessing import MinMaxScaler

    rng = np.random.default_rng(0)
    x = (rng.gamma(2.0, 3.0, size=(2000, 16)) * rng.random(16)).astype(np.float32)
    x[:, 3] = 1.5  # constant column -> 0
    want = MinMaxScaler().fit_transform(x).astype(np.float64)
    got = minmax(x)
    assert got.dtype == np.float64 and np.array_equal(got, want)
    assert np.all(got[:, 3] == 0)
    # the hand-written (x - min) / (max - min) is not the scaler: exactness is what is tested
    lo, span = x.min(0), np.where(np.ptp(x, 0) > 0, np.ptp(x, 0), 1)
    assert not np.array_equal(((x - lo) / span).astype(np.float64), want)


# ---- HDBSCAN: the BLAS-built spanning tree gives the package's labels and GLOSH scores -------
def _package(x, mcs, ms):
    import hdbscan

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = hdbscan.HDBSCAN(min_cluster_size=mcs, min_samples=ms).fit(x)
    return e.labels_, e.outlier_scores_


def _cases():
    rng = np.random.default_rng(0)
    blobs = np.vstack([rng.normal(c, 1.0, size=(200, 100)) for c in (0, 4, 8)])
    grid = rng.integers(0, 3, size=(500, 70)).astype(float)  # many exact distance ties
    base = rng.normal(size=(200, 64))
    dups = np.vstack([base, base[:80], base[:30]])  # duplicate rows (distance 0)
    far = np.vstack([rng.normal(c, 0.3, size=(120, 90)) for c in range(4)]) * 1e3 + 1e4
    return [("blobs", blobs, 30, 4), ("ties", grid, 20, 4), ("dups", dups, 15, 4), ("offset", far, 25, 5)]


@pytest.mark.parametrize("name,x,mcs,ms", _cases(), ids=[c[0] for c in _cases()])
def test_fast_hdbscan_equals_package(name, x, mcs, ms):
    labels, scores = hdbscan_prims(x, mcs, ms)
    want_l, want_s = _package(x, mcs, ms)
    assert np.array_equal(labels, want_l)
    assert np.array_equal(scores, want_s, equal_nan=True)


def test_core_distances_equal_kdtree_and_fallback_path():
    from sklearn.neighbors import KDTree

    rng = np.random.default_rng(1)
    x = np.vstack([rng.normal(size=(300, 80)), np.zeros((12, 80))])  # 12 identical rows
    want = KDTree(x).query(x, k=5)[0][:, -1]
    assert np.array_equal(core_distances(x, 5), want)
    assert np.array_equal(core_distances(x, 5, margin=0, block=7), want)  # every row proven or redone


def test_core_distances_in_high_dimension_equal_kdtree():
    # the scorecard's PACE guide (bench/methods_scorecard.py: mean of 20 noisy 256-d features
    # around 7 centres): distances concentrate, so the shortlist's margin rarely proves a row
    # complete; such rows take exact distances only where the float32 bound allows <= k-th
    from sklearn.neighbors import KDTree

    rng = np.random.default_rng(2)
    y = rng.integers(0, 7, 700)
    x = np.mean([rng.standard_normal((700, 256)) + y[:, None] for _ in range(20)], axis=0)
    want = KDTree(x).query(x, k=5)[0][:, -1]
    assert np.array_equal(core_distances(x, 5), want)
    assert np.array_equal(core_distances(x, 5, margin=0, block=64), want)


def _lhl_like(n: int, d: int, seed: int) -> np.ndarray:
    """bench/pace_select.py's synthetic activations: 10 latent classes, ReLU layer, noise."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 3, (10, 16))[rng.integers(0, 10, n)] + rng.normal(0, 1.0, (n, 16))
    return np.maximum(z @ rng.normal(0, 1 / 4, (16, d)) + rng.normal(0, 0.3, (n, d)), 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_prim_mst_equals_package_edge_for_edge(seed):
    # the float32 filter (issue 19) must leave hdbscan's spanning tree unchanged: same rows,
    # same Prim's order, same float64 weights as mst_linkage_core_vector, on min-max features
    from hdbscan._hdbscan_linkage import mst_linkage_core_vector
    from hdbscan.dist_metrics import DistanceMetric

    from labelfree.pace.fast_hdbscan import prim_mst

    x = minmax(_lhl_like(1200, 96 + 16 * seed, seed).astype(np.float32))
    core = core_distances(x, 5)
    want = mst_linkage_core_vector(x, core, DistanceMetric.get_metric("euclidean"), 1.0)
    assert np.array_equal(prim_mst(x, core), np.asarray(want))
    assert np.array_equal(prim_mst(x, core, compact_every=7), np.asarray(want))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_fast_path_selections_equal_the_package_path(seed):
    # issue 19: the automatic rule on > 60 features picks the same inputs with either backend
    from labelfree.pace.core import select

    x = _lhl_like(1500, 128, seed).astype(np.float32)
    a = select(x, 60, reduce="auto", min_cluster_size=40)
    b = select(x, 60, reduce="auto", min_cluster_size=40, hdbscan_backend="hdbscan")
    assert len(a.group_sizes) >= 2  # a real clustering, not the all-noise fallback
    assert np.array_equal(a.labels, b.labels)
    assert np.array_equal(a.indices, b.indices)


def test_cluster_uses_the_fast_path_above_60_features(monkeypatch):
    import labelfree.pace.process as proc

    calls = []
    real = proc.hdbscan_prims
    monkeypatch.setattr(proc, "hdbscan_prims", lambda *a: calls.append(1) or real(*a))
    x = _cases()[0][1]
    a = cluster(x, 30, 4)
    b = cluster(x, 30, 4, backend="hdbscan")
    assert calls == [1]
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.outlier_scores, b.outlier_scores)
    cluster(x[:, :60], 30, 4)
    assert calls == [1]  # 60 features: the package's Boruvka, not ours


def test_reference_minority_is_ceil_of_float_product():
    # the loop ends at the first integer >= the float product (at least 2)
    for n in SPEC_BUDGETS:
        for alpha in ALPHAS:
            a = allocate(n, np.array([5000, 4000]), 10_000, alpha, "reference")
            assert a.n_minority == max(2, math.ceil(n * (1 - alpha)))
