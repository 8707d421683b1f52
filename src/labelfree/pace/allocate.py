"""Budget split between groups and the minority space, and per-group quotas (Algorithm 1,
lines 8 and 12; docs/pace.md, reading R5).

Two modes: ``reference`` reproduces the authors' scripts (pace2019/pace,
``mnist_cifar_imagenet_svhn/selection.py``: ART picks grown in a while-loop, banker's rounding
of ``s_k / (N_G / (alpha n))``, at least one item per group, at least two ART picks, realised
size may differ from ``n``); ``exact`` is the paper's reading (``n_M = ceil((1 - alpha) n)``)
and guarantees ``|selection| == n`` with Hamilton (largest-remainder) apportionment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ROUNDING_MODES = ("reference", "exact")


@dataclass(frozen=True)
class Allocation:
    """Items taken from the minority space (``n_minority``) and from each group (``quotas``)."""

    n_minority: int
    quotas: np.ndarray  # int64 (m,), aligned with the group sizes given

    @property
    def size(self) -> int:
        return int(self.n_minority + self.quotas.sum())


def hamilton(total: int, weights: np.ndarray) -> np.ndarray:
    """Largest-remainder apportionment of ``total`` units over ``weights`` (reading R5, exact
    mode).

    ``q_k = floor(total * w_k / sum w)``; the remaining units go to the largest fractional parts,
    ties broken by the larger weight, then the smaller index.
    """
    w = np.asarray(weights, dtype=float)
    if total < 0:
        raise ValueError(f"hamilton: total must be >= 0, got {total}")
    if w.size == 0 or total == 0:
        return np.zeros(w.size, dtype=np.int64)
    if w.sum() <= 0:
        raise ValueError("hamilton: weights must have a positive sum")
    quota = w * total / w.sum()
    q = np.floor(quota + 1e-9).astype(np.int64)
    rest = int(total - q.sum())
    if rest > 0:
        frac = quota - q
        # lexsort: last key is primary -> -frac, then -weight, then index
        order = np.lexsort((np.arange(w.size), -w, -np.round(frac, 12)))
        q[order[:rest]] += 1
    return q


def _cap_and_redistribute(q: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Cap quotas at group sizes and hand the excess to groups with room (Hamilton on room)."""
    q = q.copy()
    for _ in range(len(q) + 1):
        over = q > caps
        if not over.any():
            break
        excess = int((q[over] - caps[over]).sum())
        q[over] = caps[over]
        room = caps - q
        if room.sum() <= 0:
            break
        q += np.minimum(hamilton(min(excess, int(room.sum())), room), room)
    return q


def allocate(
    n: int,
    group_sizes: np.ndarray,
    n_noise: int,
    alpha: float = 0.8,
    mode: str = "reference",
    min_one_per_group: bool = False,
) -> Allocation:
    """Split budget ``n`` over the minority space (``n_noise`` items) and groups (reading R5).

    Returns the number of ART picks and the per-group quotas. Quotas never exceed group sizes
    and ``n_minority`` never exceeds ``n_noise`` (reading R4).
    """
    sizes = np.asarray(group_sizes, dtype=np.int64)
    if n < 1:
        raise ValueError(f"allocate: budget n must be >= 1, got {n}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"allocate: alpha must lie in [0, 1], got {alpha}")
    if mode not in ROUNDING_MODES:
        raise ValueError(f"allocate: rounding mode {mode!r} is not one of {ROUNDING_MODES}")
    n_groups_total = int(sizes.sum())
    if sizes.size == 0 or n_groups_total == 0:
        return Allocation(min(n, n_noise), np.zeros(sizes.size, dtype=np.int64))
    if mode == "reference":
        return _reference(n, sizes, n_noise, alpha)
    # exact mode
    n = min(n, n_groups_total + n_noise)
    n_m = min(n_noise, math.ceil(n * (1 - alpha) - 1e-9))
    n_g = n - n_m
    if n_g > n_groups_total:  # groups cannot absorb it: move the rest back to M
        n_m += n_g - n_groups_total
        n_g = n_groups_total
    if min_one_per_group and n_g >= sizes.size:
        q = 1 + hamilton(n_g - sizes.size, sizes)
    else:
        q = hamilton(n_g, sizes)
    q = _cap_and_redistribute(q, sizes)
    return Allocation(int(n_m), q.astype(np.int64))


def reference_minority(n: int, alpha: float) -> int:
    """ART picks of the authors' loop: two picks, then ``while len(picks) < n * (1 - alpha)``
    with the product in floating point (``len_noise = j*(1-a_unoise)`` in ``get_std1``). For
    alpha = 0.7 and n = 50 the product is 15.000000000000002, so the loop stops at 16 picks where
    the paper's ``(1 - alpha) n = 15`` reads 15."""
    return max(2, math.ceil(n * (1 - alpha)))


def reference_quotas(n: int, sizes: np.ndarray, alpha: float) -> np.ndarray:
    """Per-group counts of the authors' ``get_ds``: with ``sample_size = n * alpha`` and
    ``per = N_G / sample_size``, a group of ``s`` inputs gives ``int(round(s / per))`` inputs if
    ``s > per``, else 1 (Python ``round``: half to even). Float operations in their order."""
    sizes = np.asarray(sizes, dtype=np.int64)
    per = int(sizes.sum()) / (n * alpha)
    return np.array([int(round(int(s) / per)) if int(s) > per else 1 for s in sizes], dtype=np.int64)


def _reference(n: int, sizes: np.ndarray, n_noise: int, alpha: float) -> Allocation:
    """Reference rounding (docs/pace.md, reading R5). Where the authors' code realises a selection (enough
    minority inputs for its ART loop), this is exactly it. Where it has none (its loop indexes
    an empty candidate list once M is exhausted, and an empty M crashes its first pick), the
    deficit ``reference_minority - N_M`` moves to the groups by largest remainders over the
    group sizes (reading R5), so the realised size
    is the size their code realises on a pool with enough minority inputs."""
    n_m_code = reference_minority(n, alpha)
    n_m = min(n_noise, n_m_code)
    q = np.minimum(reference_quotas(n, sizes, alpha), sizes)
    deficit = n_m_code - n_m
    if deficit:
        q = _cap_and_redistribute(q + hamilton(deficit, sizes), sizes)
    return Allocation(int(n_m), q)
