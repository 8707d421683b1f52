"""Indicator normalisation (paper eq. 17-18; docs/syp.md, reading R5).

Training rows (all meta-sets) are min-max normalised with pooled minima/maxima (authors' code) or
per set (``norm_train_scope: per_set``, the paper's implied reading). Evaluation sets are min-max
normalised within the set, except FD, which uses the meta-sets' FD range and is clipped to [0, 1]
(authors' code).
A zero-range column gives 0, never NaN (the authors' code would give NaN).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SCOPES = ("pooled", "per_set")


def minmax(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``(x - lo) / (hi - lo)`` column-wise; columns with ``hi == lo`` become 0."""
    x = np.asarray(x, dtype=np.float64)
    rng = np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)
    safe = np.where(rng > 0, rng, 1.0)
    out = (x - lo) / safe
    return np.where(rng > 0, out, 0.0)


def minmax_within(x: np.ndarray) -> np.ndarray:
    """Min-max normalise each column of one set within that set."""
    x = np.asarray(x, dtype=np.float64)
    return minmax(x, x.min(axis=0), x.max(axis=0))


def minmax_groups(x: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Min-max normalise each column within each group (vectorised, groups = set ids 0..G-1)."""
    x = np.asarray(x, dtype=np.float64)
    g = np.asarray(groups, dtype=np.int64)
    n_groups = int(g.max()) + 1
    lo = np.full((n_groups, x.shape[1]), np.inf)
    hi = np.full((n_groups, x.shape[1]), -np.inf)
    np.minimum.at(lo, g, x)
    np.maximum.at(hi, g, x)
    return minmax(x, lo[g], hi[g])


@dataclass(frozen=True)
class Normaliser:
    """Fitted normalisation state (docs/syp.md, reading R5).

    ``columns``: indicator names in order; ``lo``/``hi``: pooled training min/max per column (used
    for every column in pooled scope, and for FD at evaluation); ``scope``: pooled | per_set;
    ``enabled``: False gives raw indicators (Table 5 "without normalisation").
    """

    columns: tuple[str, ...]
    lo: np.ndarray
    hi: np.ndarray
    scope: str = "pooled"
    enabled: bool = True

    @property
    def fd_index(self) -> int | None:
        return self.columns.index("FD") if "FD" in self.columns else None

    def transform_train(self, x: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Normalise stacked training rows (``groups``: meta-set id of each row)."""
        if not self.enabled:
            return np.asarray(x, dtype=np.float64)
        if self.scope == "pooled":
            return minmax(x, self.lo, self.hi)
        out = minmax_groups(x, groups)
        fi = self.fd_index
        if fi is not None:
            out[:, fi] = minmax(x[:, [fi]], self.lo[[fi]], self.hi[[fi]])[:, 0]
        return out

    def transform_eval(self, x: np.ndarray) -> np.ndarray:
        """Normalise one evaluation set: per-set min-max, FD with the training range, clipped."""
        if not self.enabled:
            return np.asarray(x, dtype=np.float64)
        out = minmax_within(x)
        fi = self.fd_index
        if fi is not None:
            fd = minmax(x[:, [fi]], self.lo[[fi]], self.hi[[fi]])[:, 0]
            out[:, fi] = np.clip(fd, 0.0, 1.0)
        return out


def fit_normaliser(
    x_train: np.ndarray,
    columns: tuple[str, ...],
    scope: str = "pooled",
    enabled: bool = True,
) -> Normaliser:
    """Fit pooled min/max over all training rows (docs/syp.md, reading R5)."""
    if scope not in SCOPES:
        raise ValueError(f"norm_train_scope {scope!r} is not one of {SCOPES}")
    x = np.asarray(x_train, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != len(columns):
        raise ValueError(f"fit_normaliser: rows {x.shape} do not match columns {columns}")
    return Normaliser(tuple(columns), x.min(axis=0), x.max(axis=0), scope, enabled)
