"""Feature processing: normalisation, dimension reduction and HDBSCAN (paper section 3.2; docs/pace.md,
readings R2-R4)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .fast_hdbscan import PRIMS_MIN_FEATURES, hdbscan_prims
from .mmd import l2_rows

NORMALISATIONS = ("minmax", "l2-row")
REDUCERS = ("fastica", "pca", "nmf", "fa")
HDBSCAN_BACKENDS = ("auto", "hdbscan")


def minmax(x: np.ndarray) -> np.ndarray:
    """Per-column min-max scaling over the test set (Eq. 1); constant columns map to 0.

    This is scikit-learn's ``MinMaxScaler().fit_transform`` applied to the features in their
    own dtype (float32 for our stored activations, as the Keras outputs the authors scaled),
    then widened to float64 as ``hdbscan`` does internally. Exactness matters: a hand-written
    ``(x - min) / (max - min)`` differs from the scaler's ``x * scale + min_`` in the last bits,
    and HDBSCAN then moves boundary points between groups and the minority space,
    so the selection would no longer be the authors' for the same features.
    """
    # deferred: scikit-learn takes seconds to import (8.5 s measured on the loaded 2-core
    # machine); the registry, the CLI and the study's jobs import this module before they cluster
    from sklearn.preprocessing import MinMaxScaler

    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    return np.asarray(MinMaxScaler().fit_transform(x), dtype=np.float64)


def normalise(x: np.ndarray, how: str = "minmax") -> np.ndarray:
    """Reading R2: ``minmax`` (default) or the driving scripts' ``l2-row`` compat option."""
    x = np.asarray(x)
    x = x.reshape(len(x), -1)
    if how == "minmax":
        return minmax(x)
    if how == "l2-row":
        return l2_rows(np.asarray(x, dtype=np.float64))
    raise ValueError(f"normalisation {how!r} is not one of {NORMALISATIONS}")


def reduce(x: np.ndarray, algo: str = "fastica", d: int = 2, seed: int = 0) -> np.ndarray:
    """Reduce to ``d`` dimensions (reading R3): FastICA (random_state, max_iter=1000, tol=1e-4,
    unit-variance whitening) or PCA / NMF / FA with scikit-learn defaults. ``d`` is capped at
    the numerical rank of the centred features (FastICA cannot whiten beyond it)."""
    # deferred: scikit-learn takes seconds to import (8.5 s measured on the loaded 2-core
    # machine); the registry, the CLI and the study's jobs import this module before they cluster
    from sklearn.decomposition import NMF, PCA, FactorAnalysis, FastICA

    # Constant columns carry no information and break scikit-learn's FastICA sign fix
    # (u *= sign(u[0]) zeroes every component when the first column is constant): drop them.
    keep = np.ptp(x, axis=0) > 0
    x = x[:, keep] if keep.any() else x[:, :1]
    d = int(min(d, x.shape[1], len(x)))
    if algo in ("fastica", "fa"):  # whitening needs d <= rank (dead ReLU units lower it)
        xc = x - x.mean(axis=0)
        ev = np.linalg.eigvalsh(xc.T @ xc) if x.shape[1] <= len(x) else np.linalg.eigvalsh(xc @ xc.T)
        rank = int((ev > max(ev.max(), 0.0) * 1e-10).sum())
        d = max(1, min(d, rank))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings are recorded by the caller's timing
        if algo == "fastica":
            est = FastICA(
                n_components=d, random_state=seed, max_iter=1000, tol=1e-4,
                whiten="unit-variance", whiten_solver="eigh" if len(x) > 10 * x.shape[1] else "svd",
            )
        elif algo == "pca":
            est = PCA(n_components=d, random_state=seed)
        elif algo == "nmf":
            est = NMF(n_components=d, random_state=seed)
            x = np.maximum(x, 0.0)
        elif algo == "fa":
            est = FactorAnalysis(n_components=d, random_state=seed)
        else:
            raise ValueError(f"reducer {algo!r} is not one of {REDUCERS}")
        try:
            out = est.fit_transform(x)
        except ValueError:
            out = np.full((len(x), d), np.nan)
        if algo == "fastica" and not np.isfinite(out).all():
            # eigh whitening of a rank-deficient covariance (dead units) can give NaN: use SVD
            est.set_params(whiten_solver="svd")
            out = est.fit_transform(x)
    if not np.isfinite(out).all():
        raise ValueError(f"reduce: {algo} to d={d} produced non-finite values")
    return np.ascontiguousarray(out, dtype=np.float64)


@dataclass(frozen=True)
class Clustering:
    """HDBSCAN output: ``labels`` (-1 = minority space) and GLOSH ``outlier_scores``."""

    labels: np.ndarray
    outlier_scores: np.ndarray

    @property
    def n_groups(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size and self.labels.max() >= 0 else 0

    def group_sizes(self) -> np.ndarray:
        lab = self.labels[self.labels >= 0]
        return np.bincount(lab, minlength=self.n_groups).astype(np.int64)


def cluster(
    x: np.ndarray, min_cluster_size: int = 80, min_samples: int = 4, n_jobs: int = 1,
    backend: str = "auto",
) -> Clustering:
    """HDBSCAN (the ``hdbscan`` package, reading R4) with library defaults otherwise.

    ``backend='auto'``: above 60 features (where the package's 'best' algorithm is Prim's on a
    KD-tree) the same minimum spanning tree is built with BLAS by ``fast_hdbscan`` and fed to
    the package's own labelling, so labels and GLOSH scores are the package's;
    ``backend='hdbscan'`` always calls ``hdbscan.HDBSCAN``. Fewer inputs than
    ``min_cluster_size`` (or fewer than ``min_samples + 1``) give all noise with zero outlier
    scores (reading R4). Group ids are HDBSCAN's own (deterministic for given data).
    """
    # deferred: hdbscan imports scikit-learn (seconds, as above)
    import hdbscan

    if backend not in HDBSCAN_BACKENDS:
        raise ValueError(f"cluster: backend {backend!r} is not one of {HDBSCAN_BACKENDS}")
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    if n < max(min_cluster_size, min_samples + 1, 2):
        return Clustering(-np.ones(n, dtype=np.int64), np.zeros(n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if backend == "auto" and x.shape[1] >= PRIMS_MIN_FEATURES and np.isfinite(x).all():
            labels, scores = hdbscan_prims(x, int(min_cluster_size), int(min_samples))
        else:
            est = hdbscan.HDBSCAN(
                min_cluster_size=int(min_cluster_size),
                min_samples=int(min_samples),
                metric="euclidean",
                core_dist_n_jobs=n_jobs,
            ).fit(x)
            labels, scores = est.labels_, est.outlier_scores_
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=0.0)
    return Clustering(np.asarray(labels, dtype=np.int64), scores)


def poor_clustering(c: Clustering, max_groups: int = 3, max_share: float = 0.8) -> bool:
    """Quality rule of paper section 4.4: <= 3 groups or one group > 80 % of all N inputs."""
    if c.n_groups <= max_groups:
        return True
    return bool(c.group_sizes().max() > max_share * len(c.labels))
