"""Seeded, stratified partition of a labelled set into named splits by fractions.

Method (exact sizes, stratified to within one item per class and split):
1. split ``s`` gets ``n_s`` items, ``n_s = floor(N f_s)`` plus one for the largest remainders,
   so that the sizes sum to ``round(N * sum f)`` (all N when the fractions sum to 1); the
   rest (when the fractions sum to less than 1) is dropped;
2. the items are ordered by class, randomly within a class (the seeded generator);
3. the split labels are laid out along that order as evenly as possible: split ``s`` claims
   the ideal positions ``(j + 1/2) N / n_s``, j = 0..n_s-1, merged over the splits.
Each class is a contiguous run of the order, so every split receives ``m_c f_s`` items of
class ``c`` up to rounding. Indices are returned sorted (the source order).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from labelfree.data.base import DataError

_DROP = "\x00drop"


def split_sizes(n: int, fractions: Mapping[str, float]) -> dict[str, int]:
    """Exact split sizes by the largest-remainder rule (see module docstring)."""
    if not fractions:
        raise DataError("at least one split fraction is needed")
    names = list(fractions)
    f = np.array([fractions[k] for k in names], dtype=np.float64)
    if (f <= 0).any() or f.sum() > 1 + 1e-9:
        raise DataError(f"fractions must be > 0 and sum to at most 1, got {dict(fractions)}")
    total = min(n, int(round(n * f.sum())))
    ideal = n * f
    sizes = np.floor(ideal).astype(np.int64)
    short = total - int(sizes.sum())
    if short > 0:
        order = np.argsort(-(ideal - sizes), kind="stable")
        sizes[order[:short]] += 1
    return {k: int(v) for k, v in zip(names, sizes, strict=True)}


def stratified_partition(
    y: np.ndarray | None,
    fractions: Mapping[str, float],
    rng: np.random.Generator,
    n: int | None = None,
) -> dict[str, np.ndarray]:
    """Partition ``range(N)`` into named splits, stratified by ``y`` (1-D labels) when given.

    ``y=None`` (or multi-hot labels) gives a plain seeded random partition of ``n`` items.
    Returns ``{split: sorted int64 indices}``; splits are disjoint.
    """
    if y is not None and np.ndim(y) == 1:
        n = len(y)
        order = np.lexsort((rng.random(n), np.asarray(y)))
    else:
        n = len(y) if y is not None else n
        if n is None:
            raise DataError("stratified_partition: give labels or n")
        order = rng.permutation(n)
    sizes = split_sizes(n, fractions)
    dropped = n - sum(sizes.values())
    all_sizes = {**sizes, **({_DROP: dropped} if dropped else {})}
    names = list(all_sizes)
    pos = np.concatenate([(np.arange(m) + 0.5) * n / m for m in all_sizes.values() if m])
    lab = np.concatenate([np.full(m, i) for i, m in enumerate(all_sizes.values()) if m])
    pattern = lab[np.argsort(pos, kind="stable")]
    out = {}
    for i, name in enumerate(names):
        if name != _DROP:
            out[name] = np.sort(order[pattern == i]).astype(np.int64)
    return out


def subsample(
    y: np.ndarray | None, fraction: float, rng: np.random.Generator, n: int | None = None
) -> np.ndarray:
    """Sorted indices of a seeded (stratified when ``y`` is 1-D) subset of ``round(N f)`` items."""
    if fraction >= 1:
        return np.arange(len(y) if y is not None else n, dtype=np.int64)
    return stratified_partition(y, {"keep": fraction}, rng, n=n)["keep"]
