"""Which zoos the scorecard scores, decided at parse time (standard library only).

The scorecard scores every zoo with a model and a labelled test set; a zoo of one model on
accuracy estimation alone (ranking and selection compare models), and it lists every zoo, scored
or not and why, in one table (extra-all-zoos.csv). A zoo whose labelled sets are all multi-label
is found only when its labels are read: its scorecard job writes that reason
(:func:`labelfree.scorecard.core.unscored`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labelfree.laf.plan import labelled_zoos

#: extra-all-zoos' reason for a zoo of one model (ranking and model selection compare models).
ONE_MODEL_PARTS = ("one model: label-free and few-label accuracy estimation scored; ranking "
                   "and model selection not applicable")


def scorecard_zoos(
    zoos: list[str], scored: Mapping[str, list[str]], n_models: Mapping[str, int], source: str
) -> tuple[list[str], dict[str, str]]:
    """(zoos the scorecard scores, zoo -> why not for the others): every zoo with a model and a
    labelled set to score. A zoo of one model is scored on accuracy estimation alone (ranking
    and selection are not applicable, labelfree.scorecard.core.ONE_MODEL); a zoo whose only
    scored set is the source gets the source's sanity rows, all a user with clean data only can
    have. ``scored``: zoo -> its labelled test sets the scorecard scores.
    """
    del source  # kept in the signature: the reason text of a skipped zoo names no source set
    return labelled_zoos(zoos, scored, n_models, "the scorecard", min_models=1)


def scorecard_coverage(
    zoos: list[str], scored: Mapping[str, list[str]], n_models: Mapping[str, int],
    skips: Mapping[str, str],
) -> list[dict[str, Any]]:
    """One row per configured zoo: its models, scored test sets, whether it has a scorecard
    (``yes``; ``estimation only`` for a zoo of one model, :data:`ONE_MODEL_PARTS` its reason;
    ``no``, with the reason from ``skips`` of :func:`scorecard_zoos`): the rows of
    extra-all-zoos.csv before the scorecard jobs add their own reasons
    (labelfree.scorecard.report.coverage)."""
    def row(z: str) -> dict[str, Any]:
        n = int(n_models.get(z, 0))
        if z in skips:
            return dict(zoo=z, models=n, scored_testsets=0, scorecard="no", reason=skips[z])
        one = n == 1
        return dict(zoo=z, models=n, scored_testsets=len(scored.get(z, [])),
                    scorecard="estimation only" if one else "yes",
                    reason=ONE_MODEL_PARTS if one else "")

    return [row(z) for z in zoos]
