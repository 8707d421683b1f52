"""Scorecard of label-free and few-label methods on a zoo's arrays (docs/methods.md).

``labelfree.scorecard.core.score_zoo(probs, labels, shift_kind, source=...)`` scores every
registered method; :mod:`labelfree.scorecard.report` writes the tables (csv + md) and the figure;
:mod:`labelfree.scorecard.artefacts` reads a zoo's inference artefacts for the workflow.
"""
