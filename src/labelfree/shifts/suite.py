"""Build the test sets of the shifts layer from a dataset's `id` test set.

One call per (dataset, corruption) gives all requested severities; one call per dataset gives
the natural-shift sets. Each (corruption, severity) and each natural shift draws from its own
random stream ``labelfree.seeds.rng(seed, dataset, name, severity)`` (ARCHITECTURE.md,
conventions), so adding or removing a set never changes another.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labelfree.seeds import rng as seeded_rng
from labelfree.shifts.corruptions import corrupt
from labelfree.shifts.natural import natural_shift
from labelfree.shifts.released import (
    ReleasedArchiveError,
    available,
    load_released,
    missing_message,
)
from labelfree.store import write_image_set

log = logging.getLogger(__name__)

#: Sets that move pixels; aligned extras of the id set (boxes, masks) do not carry over to them.
GEOMETRIC: frozenset[str] = frozenset({"elastic_transform", "natural-shear", "natural-rotate"})


def keeps_geometry(name: str) -> bool:
    """Whether the id set's aligned extras (boxes, masks) stay valid for set ``name``."""
    return name not in GEOMETRIC


@dataclass(frozen=True)
class TestSet:
    """One generated or released test set: images (uint8 NHWC), labels and provenance."""

    x: np.ndarray
    y: np.ndarray
    source: str  # "generated" or the released archive directory


def corruption_sets(
    x: np.ndarray,
    y: np.ndarray,
    corruption: str,
    severities: Iterable[int],
    *,
    seed: int,
    dataset: str,
    params: str = "auto",
    released: str | Path | None = None,
    single_level_severity: int = 3,
    fallback: str = "error",
) -> dict[int, TestSet]:
    """The ``{corruption}-{severity}`` sets of one dataset (LaF paper, Section 4.3; docs/shifts.md,
    reading R1).

    With ``released`` (a -C archive directory) the archive's sets are used; sets it lacks are
    regenerated when ``fallback == "generate"`` and refused (one error listing all of them)
    when ``fallback == "error"``.
    """
    severities = list(severities)
    if fallback not in ("error", "generate"):
        raise ValueError(
            f"shifts.released_fallback: {fallback!r} is not one of ['error', 'generate']"
        )
    have: set[tuple[str, int]] = set()
    if released:
        have = available(released, single_level_severity)
        wanted = [(corruption, s) for s in severities]
        if fallback == "error" and any(w not in have for w in wanted):
            raise ReleasedArchiveError(missing_message(released, wanted, single_level_severity))
    out: dict[int, TestSet] = {}
    for s in severities:
        if (corruption, s) in have:
            rx, ry = load_released(released, corruption, s, single_level_severity)  # type: ignore[arg-type]
            if len(ry) != len(y) or not np.array_equal(ry, y):
                log.warning(
                    "%s: released %s-%d labels differ from the id test set (%d vs %d images)",
                    released,
                    corruption,
                    s,
                    len(ry),
                    len(y),
                )
            out[s] = TestSet(rx, ry, str(released))
            log.info("%s-%d: %d images from released archive %s", corruption, s, len(ry), released)
        else:
            gen = seeded_rng(seed, dataset, corruption, s)
            out[s] = TestSet(corrupt(x, corruption, s, gen, params=params), y.copy(), "generated")
            log.info("%s-%d: %d images generated (params=%s)", corruption, s, len(y), params)
    return out


def natural_sets(
    x: np.ndarray, y: np.ndarray, names: Iterable[str], *, seed: int, dataset: str
) -> dict[str, TestSet]:
    """The natural-shift sets of one dataset (docs/shifts.md, reading R4), labels kept."""
    out = {}
    for name in names:
        out[name] = TestSet(
            natural_shift(x, name, seeded_rng(seed, dataset, name)), y.copy(), "generated"
        )
        log.info("%s: %d images generated", name, len(y))
    return out


def write_corruption(clean, corruption: str, severities: Iterable[int], paths: Iterable,
                     **kwargs) -> None:
    """Write one corruption of ``clean`` (a :class:`labelfree.store` image set) at each severity
    to its path, in order: :func:`corruption_sets` with ``kwargs``; a generated set keeps the
    clean set's geometry extras where the corruption keeps geometry (:func:`keeps_geometry`).
    The one writer of the per-corruption and the per-dataset shift jobs."""
    severities = list(severities)
    sets = corruption_sets(clean.x, clean.y, corruption, severities, **kwargs)
    extras = dict(clean.extras) if keeps_geometry(corruption) else {}
    for severity, path in zip(severities, paths, strict=True):
        ts = sets[severity]
        keep = extras if ts.source == "generated" else {}
        write_image_set(path, ts.x, ts.y, **keep)
        logging.info("%s: %d images (%s), extras %s", path, len(ts.y), ts.source, sorted(keep))
