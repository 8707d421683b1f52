"""The shifts layer: -C corruption suites, released -C archives and natural-shift sets.

See docs/shifts.md and laf spec sections 5.1, 5.2 and 8.
"""

from labelfree.shifts.corruptions import RANDOM_CORRUPTIONS, corrupt
from labelfree.shifts.natural import NATURAL_SHIFTS, natural_shift
from labelfree.shifts.params import CORRUPTIONS, REFERENCE_SIZE, SEVERITIES, scale_factor
from labelfree.shifts.released import ReleasedArchiveError, load_released
from labelfree.shifts.suite import TestSet, corruption_sets, natural_sets

__all__ = [
    "CORRUPTIONS",
    "NATURAL_SHIFTS",
    "RANDOM_CORRUPTIONS",
    "REFERENCE_SIZE",
    "SEVERITIES",
    "ReleasedArchiveError",
    "TestSet",
    "corrupt",
    "corruption_sets",
    "load_released",
    "natural_shift",
    "natural_sets",
    "scale_factor",
]
