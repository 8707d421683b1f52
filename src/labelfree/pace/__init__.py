"""PACE: practical accuracy estimation from a few labelled inputs (spec ../shared/specs/pace.md).

``select(features, n)`` picks the inputs to label; ``fit`` caches clustering and orders so every
budget is served by prefixes; ``baselines`` holds SRS / CES / CSS and the RQ5 variants;
``metrics`` the estimator, error, improvement and statistics; ``experiment`` runs subjects and
writes the paper's tables and figures; ``subjects`` builds the small-scale digits subjects.
"""

from .allocate import Allocation, allocate, hamilton
from .art import art_order
from .core import PaceConfig, PaceFit, PaceResult, fit, select
from .mmd import mmd_criticisms, mmd_greedy, mmd_objective

__all__ = [
    "Allocation", "PaceConfig", "PaceFit", "PaceResult", "allocate", "art_order", "fit",
    "hamilton", "mmd_criticisms", "mmd_greedy", "mmd_objective", "select",
]
