"""PACE selection (paper section 3, Algorithm 1): fit once per subject, serve every budget.

``fit`` normalises, reduces (by the automatic quality rule or an override), clusters with
HDBSCAN and stores one MMD-critic prototype order per group and one ART order over the minority
space; ``PaceFit.select(n)`` takes prefixes of those orders (docs/pace.md, reading R15). ``select`` does both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .allocate import ROUNDING_MODES, Allocation, allocate
from .art import ART_MODES, art_order
from .mmd import mmd_criticisms, mmd_greedy
from .process import (
    HDBSCAN_BACKENDS,
    NORMALISATIONS,
    REDUCERS,
    Clustering,
    cluster,
    normalise,
    poor_clustering,
)
from .process import reduce as reduce_features


@dataclass(frozen=True)
class PaceConfig:
    """PACE hyperparameters (defaults: docs/pace.md, reading R18). ``reduce``: 'auto' (quality rule), 'none' or 'always'
    (apply ``reducer`` with ``dim`` unconditionally). ``hdbscan_backend``: 'auto' (the package's
    labels from a BLAS-built spanning tree above 60 features, ``fast_hdbscan``) or 'hdbscan'."""

    alpha: float = 0.8
    normalisation: str = "minmax"
    reduce: str = "auto"
    reducer: str = "fastica"
    dim: int = 2
    min_cluster_size: int = 80
    min_samples: int = 4
    gamma: float = 0.026
    n_max: int = 180
    rounding: str = "exact"
    art_mode: str = "maximin"
    criticisms: int = 0
    min_one_per_group: bool = False
    seed: int = 0
    rule_max_groups: int = 3
    rule_max_share: float = 0.8
    hdbscan_backend: str = "auto"

    def __post_init__(self) -> None:
        checks = [
            ("normalisation", self.normalisation, NORMALISATIONS),
            ("reduce", self.reduce, ("auto", "none", "always")),
            ("reducer", self.reducer, REDUCERS),
            ("rounding", self.rounding, ROUNDING_MODES),
            ("art_mode", self.art_mode, ART_MODES),
            ("hdbscan_backend", self.hdbscan_backend, HDBSCAN_BACKENDS),
        ]
        for key, val, allowed in checks:
            if val not in allowed:
                raise ValueError(f"PaceConfig.{key}={val!r} is not one of {allowed}")
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"PaceConfig.alpha={self.alpha} is not in [0, 1]")
        if self.dim < 1 or self.n_max < 1 or self.min_cluster_size < 2 or self.min_samples < 1:
            raise ValueError(f"PaceConfig: dim, n_max, min_samples >= 1, min_cluster_size >= 2: {self}")

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> PaceConfig:
        d = dict(d or {})
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"PaceConfig: unknown key(s) {sorted(unknown)}")
        return cls(**d)


@dataclass
class PaceResult:
    """One selection plus what makes it interpretable (groups, prototypes, criticisms)."""

    indices: np.ndarray  # selected test-set indices: group prototypes (group order), then ART
    n: int  # requested budget
    labels: np.ndarray  # group of every input (-1 = minority space)
    group_sizes: np.ndarray
    quotas: np.ndarray
    n_minority: int
    prototypes: dict[int, np.ndarray]  # group -> test-set indices in greedy order (cached m)
    criticisms: dict[int, np.ndarray]
    art: np.ndarray  # minority-space pick order (test-set indices)
    reduced: bool
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return int(len(self.indices))


@dataclass
class PaceFit:
    """Cached clustering and orders for one (subject, feature configuration) (reading R15)."""

    config: PaceConfig
    processed: np.ndarray
    clustering: Clustering
    reduced: bool
    members: list[np.ndarray]  # test-set indices of each group (ascending)
    prototypes: list[np.ndarray]  # greedy order, test-set indices, length min(s_k, n_max)
    criticisms: list[np.ndarray]
    art: np.ndarray  # ART order over M (or over everything when there is no group)
    timings: dict[str, float]

    @property
    def noise(self) -> np.ndarray:
        return np.flatnonzero(self.clustering.labels < 0)

    def allocation(self, n: int, alpha: float | None = None, rounding: str | None = None) -> Allocation:
        cfg = self.config
        sizes = self.clustering.group_sizes()
        if len(sizes) == 0:  # reading R4: no group -> whole-set ART (PACE_art with deterministic start)
            return Allocation(min(n, len(self.art)), sizes)
        return allocate(
            n, sizes, len(self.noise), cfg.alpha if alpha is None else alpha,
            rounding or cfg.rounding, cfg.min_one_per_group,
        )

    def select(self, n: int, alpha: float | None = None, rounding: str | None = None) -> PaceResult:
        """Selection for budget ``n`` from prefixes of the cached orders (Algorithm 1, 7-14)."""
        if n > self.config.n_max:
            raise ValueError(f"budget n={n} exceeds the cached n_max={self.config.n_max}; refit")
        t0 = time.perf_counter()
        alloc = self.allocation(n, alpha, rounding)
        parts = [p[:q] for p, q in zip(self.prototypes, alloc.quotas, strict=True)]
        parts.append(self.art[: alloc.n_minority])
        idx = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
        timings = dict(self.timings)
        timings["allocate"] = time.perf_counter() - t0
        return PaceResult(
            indices=idx, n=n, labels=self.clustering.labels,
            group_sizes=self.clustering.group_sizes(), quotas=alloc.quotas,
            n_minority=alloc.n_minority,
            prototypes=dict(enumerate(self.prototypes)),
            criticisms=dict(enumerate(self.criticisms)),
            art=self.art, reduced=self.reduced, timings=timings,
        )


def process(features: np.ndarray, cfg: PaceConfig) -> tuple[np.ndarray, Clustering, bool, dict]:
    """Normalise, reduce by the rule or override, cluster (readings R2-R4). Returns timings too."""
    tm: dict[str, float] = {}
    t = time.perf_counter()
    x = normalise(features, cfg.normalisation)
    tm["normalise"] = time.perf_counter() - t
    reduced = False
    c = None
    if cfg.reduce == "auto":
        t = time.perf_counter()
        c = cluster(x, cfg.min_cluster_size, cfg.min_samples, backend=cfg.hdbscan_backend)
        tm["cluster_full"] = time.perf_counter() - t
        reduced = poor_clustering(c, cfg.rule_max_groups, cfg.rule_max_share) and x.shape[1] > cfg.dim
    elif cfg.reduce == "always":
        reduced = True
    if reduced:
        t = time.perf_counter()
        x = reduce_features(x, cfg.reducer, cfg.dim, cfg.seed)
        tm["reduce"] = time.perf_counter() - t
        c = None
    if c is None:
        t = time.perf_counter()
        c = cluster(x, cfg.min_cluster_size, cfg.min_samples, backend=cfg.hdbscan_backend)
        tm["cluster"] = time.perf_counter() - t
    return x, c, reduced, tm


def fit(features: np.ndarray, config: PaceConfig | dict | None = None, **overrides: Any) -> PaceFit:
    """Run Algorithm 1 lines 1-6 once and cache prototype / ART orders up to ``n_max``."""
    cfg = config if isinstance(config, PaceConfig) else PaceConfig.from_dict(config)
    if overrides:
        cfg = replace(cfg, **overrides)
    features = np.asarray(features)
    if features.ndim < 2 or len(features) == 0:
        raise ValueError(f"pace.fit: features must be (N, D) with N > 0, got {features.shape}")
    t_all = time.perf_counter()
    x, c, reduced, tm = process(features, cfg)
    labels = c.labels
    members = [np.flatnonzero(labels == g) for g in range(c.n_groups)]
    t = time.perf_counter()
    protos = [m[mmd_greedy(x[m], cfg.n_max, cfg.gamma)] for m in members]
    crits = [
        m[mmd_criticisms(x[m], np.searchsorted(m, p), cfg.criticisms, cfg.gamma)]
        if cfg.criticisms > 0 else np.zeros(0, np.int64)
        for m, p in zip(members, protos, strict=True)
    ]
    tm["mmd"] = time.perf_counter() - t
    t = time.perf_counter()
    pool = np.flatnonzero(labels < 0) if members else np.arange(len(x))
    art = pool[art_order(x[pool], cfg.n_max, scores=c.outlier_scores[pool], mode=cfg.art_mode)]
    tm["art"] = time.perf_counter() - t
    tm["total"] = time.perf_counter() - t_all
    return PaceFit(cfg, x, c, reduced, members, protos, crits, art, tm)


def select(
    features: np.ndarray, n: int, config: PaceConfig | dict | None = None, **overrides: Any
) -> PaceResult:
    """Select ``n`` inputs to label (Algorithm 1): chosen indices, groups, prototypes, criticisms,
    timings. ``n_max`` is raised to ``n`` if needed."""
    cfg = config if isinstance(config, PaceConfig) else PaceConfig.from_dict(config)
    cfg = replace(cfg, **overrides) if overrides else cfg
    if n > cfg.n_max:
        cfg = replace(cfg, n_max=n)
    return fit(features, cfg).select(n)
