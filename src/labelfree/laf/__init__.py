"""LaF: labeling-free model selection (Hu et al., TOSEM 2023), its baselines and experiments.

Spec: ../shared/specs/laf.md. ``rank`` is the method (section 2); ``baselines`` holds Random, SDS,
CES and CRC (section 3); ``metrics`` the ranking metrics (section 4); ``experiment`` runs every
method on one test set; ``report`` builds the tables and figures of section 6.
"""

from importlib import import_module

# Loaded on first use (PEP 562), so that the workflow's parse-time import of
# labelfree.laf.layout pulls in no scipy (tests/workflow/test_parse_imports.py).
_HOME = {
    "LafInputError": "core",
    "LafResult": "core",
    "rank": "core",
    "ranks_descending": "core",
    "batch_metrics": "metrics",
    "ground_truth_accuracy": "metrics",
    "jaccard_top_k": "metrics",
    "ranking_metrics": "metrics",
}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name in _HOME:
        return getattr(import_module(f"labelfree.laf.{_HOME[name]}"), name)
    raise AttributeError(f"module 'labelfree.laf' has no attribute {name!r}")
