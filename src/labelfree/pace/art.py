"""Adaptive random testing over the minority space (PACE spec 2.8).

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
    smallest position). ``mode='reference'`` reproduces the released scripts' loop bug: after the
    second pick, the remaining rows with non-zero distance in descending position order.
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
        picks[1] = int(np.argmax(np.where(taken, -np.inf, mind)))
        taken[picks[1]] = True
        mind = np.minimum(mind, np.sqrt(((x - x[picks[1]]) ** 2).sum(axis=1)))
        rest = np.flatnonzero(~taken & (mind > 0))[::-1]
        zero = np.flatnonzero(~taken & (mind <= 0))[::-1]
        tail = np.concatenate([rest, zero])[: m - 2]
        picks[2 : 2 + len(tail)] = tail
        return picks[: 2 + len(tail)]
    for t in range(1, m):
        c = int(np.argmax(np.where(taken, -np.inf, mind)))
        picks[t] = c
        taken[c] = True
        np.minimum(mind, np.sqrt(((x - x[c]) ** 2).sum(axis=1)), out=mind)
    return picks
