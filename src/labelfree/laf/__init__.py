"""LaF: labeling-free model selection (Hu et al., TOSEM 2023), its baselines and experiments.

Spec: ../shared/specs/laf.md. ``rank`` is the method (section 2); ``baselines`` holds Random, SDS,
CES and CRC (section 3); ``metrics`` the ranking metrics (section 4); ``experiment`` runs every
method on one test set; ``report`` builds the tables and figures of section 6.
"""

from labelfree.laf.core import LafInputError, LafResult, rank, ranks_descending
from labelfree.laf.metrics import (
    batch_metrics,
    ground_truth_accuracy,
    jaccard_top_k,
    ranking_metrics,
)

__all__ = [
    "LafInputError",
    "LafResult",
    "batch_metrics",
    "ground_truth_accuracy",
    "jaccard_top_k",
    "rank",
    "ranking_metrics",
    "ranks_descending",
]
