"""Study `alphatrim`: training variability measured with the robust (trimmed) KS test.

Spec: ../shared/specs/alpha-trimming.md. Library layers:

- :mod:`.kernel`     reference CDF, closed-form trimmed KS distance, threshold gamma (spec 2.3-2.5)
- :mod:`.bootstrap`  Algorithm 1, the bootstrap alpha-trimming level alpha-hat (spec 2.6)
- :mod:`.metrics`    logit gap, accuracy, churn, ECE, ensembles (spec 2.1, 2.2, 2.8)
- :mod:`.experiment` the experiment blocks E1/E2/E3 and their tables (spec 3.4, 4)
- :mod:`.figures`    the paper's figures (spec 4)
"""

from labelfree.alphatrim.bootstrap import DEFAULT_GRID, AlphaHatResult, alpha_hat
from labelfree.alphatrim.kernel import (
    ReferenceCDF,
    acceptance_threshold,
    delta_a,
    ecdf_distance,
    reference_cdf,
    trimmed_ks,
    trimming_function,
)
from labelfree.alphatrim.metrics import (
    accuracy,
    average_churn,
    churn_matrix,
    churn_vs,
    ece,
    ensemble_gaps,
    logit_gap,
    predictions,
    sample_ensembles,
)

__all__ = [
    "DEFAULT_GRID",
    "AlphaHatResult",
    "ReferenceCDF",
    "acceptance_threshold",
    "accuracy",
    "alpha_hat",
    "average_churn",
    "churn_matrix",
    "churn_vs",
    "delta_a",
    "ece",
    "ecdf_distance",
    "ensemble_gaps",
    "logit_gap",
    "predictions",
    "reference_cdf",
    "sample_ensembles",
    "trimmed_ks",
    "trimming_function",
]
