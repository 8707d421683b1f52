"""The shifts layer: -C corruption suites, released -C archives and natural-shift sets.

See docs/shifts.md and laf spec sections 5.1, 5.2 and 8.

The names below load on first use (PEP 562): the workflow's rule files import
:mod:`labelfree.shifts.released` while Snakemake parses the Snakefile, and importing the
corruption and natural-shift operations there would cost every `snakemake` call their scipy and
PIL imports (issue 23, item 4; tests/workflow/test_parse_imports.py).
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> submodule that defines it
_WHERE = {
    "RANDOM_CORRUPTIONS": "corruptions",
    "corrupt": "corruptions",
    "NATURAL_SHIFTS": "natural",
    "natural_shift": "natural",
    "CORRUPTIONS": "params",
    "REFERENCE_SIZE": "params",
    "SEVERITIES": "params",
    "scale_factor": "params",
    "ReleasedArchiveError": "released",
    "load_released": "released",
    "TestSet": "suite",
    "corruption_sets": "suite",
    "natural_sets": "suite",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
