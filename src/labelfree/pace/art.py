"""Adaptive random testing over the minority space (paper section 3.4, Equation 5; docs/pace.md,
reading R7).

Max-min Euclidean selection with a deterministic first pick (largest GLOSH outlier score);
O(|M| d) per pick with a running nearest-pick distance vector.
"""

from __future__ import annotations

import numpy as np

ART_MODES = ("maximin", "reference")


def art_order(
    x: np.ndarray, m: int, first: int | None = None, scores: np.ndarray | None = None,
    mode: str = "maximin",
) -> np.ndarray:
    """Pick order of up to ``m`` rows of ``x`` (positions within ``x``).

    First pick: ``first`` if given, else argmax of ``scores`` (ties -> smallest position), else 0.
    Next picks (Eq. 5): argmax over unpicked rows of the min distance to the picks (ties ->
    smallest position). ``mode='reference'`` reproduces the released scripts (see
    ``_reference_order``).
    """
    if mode not in ART_MODES:
        raise ValueError(f"art_order: art_mode {mode!r} is not one of {ART_MODES}")
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    m = int(min(m, n))
    if m <= 0:
        return np.zeros(0, dtype=np.int64)
    if first is None:
        if scores is not None:
            sc = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=-np.inf)
            first = int(np.argmax(sc))
        else:
            first = 0
    picks = np.empty(m, dtype=np.int64)
    picks[0] = first
    mind = np.sqrt(((x - x[first]) ** 2).sum(axis=1))
    taken = np.zeros(n, dtype=bool)
    taken[first] = True
    if mode == "reference" and m > 1:
        return _reference_order(x, m, first, mind)
    for t in range(1, m):
        c = int(np.argmax(np.where(taken, -np.inf, mind)))
        picks[t] = c
        taken[c] = True
        np.minimum(mind, np.sqrt(((x - x[c]) ** 2).sum(axis=1)), out=mind)
    return picks


def _reference_order(x: np.ndarray, m: int, first: int, dist_first: np.ndarray) -> np.ndarray:
    """The authors' minority-space loop (``get_std1`` in pace2019/pace
    ``mnist_cifar_imagenet_svhn/selection.py`` at 09287f7; docs/pace.md, reading R7).

    Second pick: ``np.argmax(dis[first])`` over all of M, the first pick included (its distance
    is 0, so with every point a duplicate of the first the first is picked twice). Every later
    pick: the remaining rows (ascending) with their minimum distance to the picks; the
    candidate defaults to the first remaining row and is replaced by every later row with a
    distance > 0 (``maxnum`` is never updated), so it is the *last* remaining row at a non-zero
    distance, or the first remaining row when all remaining rows duplicate a pick. The
    distances are re-evaluated after each pick, so a row that duplicates a later pick drops to
    the zero class from then on.
    """
    n = len(x)
    picks = [first, int(np.argmax(dist_first))]
    taken = np.zeros(n, dtype=bool)
    taken[picks] = True
    mind = np.minimum(dist_first, np.sqrt(((x - x[picks[1]]) ** 2).sum(axis=1)))
    pos = np.arange(n)
    while len(picks) < m and not taken.all():
        nonzero = np.flatnonzero(~taken & (mind > 0))
        c = int(nonzero[-1]) if len(nonzero) else int(pos[~taken][0])
        picks.append(c)
        taken[c] = True
        np.minimum(mind, np.sqrt(((x - x[c]) ** 2).sum(axis=1)), out=mind)
    return np.asarray(picks, dtype=np.int64)
