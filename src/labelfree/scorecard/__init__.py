"""Scorecard of label-free and few-label methods on a zoo's arrays (issue 18; scorecard spec 12).

``score_zoo(probs, labels, shift_kind, source=...)`` scores every registered method;
``report.write(card, outdir)`` writes the tables (csv + md) and the figure.
"""

from . import metrics, report
from .core import DEFAULT_RUNS, Scorecard, score_zoo

__all__ = ["DEFAULT_RUNS", "Scorecard", "metrics", "report", "score_zoo"]
