"""Which enabled studies can run on the configured zoos (issue 14 item 4), decided at parse time.

A study that cannot run on what the config gives it says so in one line and is skipped, instead
of stopping the whole run (and the answers of every zoo) with an error:

- pace, syp, alphatrim and metamorphic run on zoos built for them (a zoo listing the test-set
  groups they create from the `id` set, with features, or trained with known seeds). They skip
  when their zoo is a prediction zoo (no weights to run on the inputs they create), when it lacks
  those groups or features, or when the config leaves them nothing (the study key omitted, so
  its default zoo is not configured; no experiments; no zoos).
- laf ranks models against labels: it skips a zoo with one model or without labelled test sets
  (:func:`labelled_zoos`), and the study when no zoo is left. The scorecard scores every zoo
  with a labelled set, a zoo of one model on accuracy estimation only (:func:`scorecard_zoos`),
  and lists every zoo, scored or not and why, in one table (:func:`scorecard_coverage`).

A study zoo named explicitly but absent from `zoos` stays an error (a typo), raised by the
study's own rule file. Parse-time code: no numpy, no torch.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from labelfree.alphatrim.plan import skip_reason as _alphatrim
from labelfree.config import default_zoo_missing
from labelfree.laf.plan import labelled_zoos
from labelfree.metamorphic.plan import skip_reason as _metamorphic
from labelfree.pace.plan import skip_reason as _pace
from labelfree.syp.plan import skip_reason as _syp

_zoo_missing = default_zoo_missing


CHECKS = {"pace": _pace, "syp": _syp, "alphatrim": _alphatrim, "metamorphic": _metamorphic}


def fixed_zoo_skips(
    cfg: Mapping[str, Any], user_cfg: Mapping[str, Any], prediction_zoos: Collection[str]
) -> dict[str, str]:
    """study -> one-line reason, for every enabled study of CHECKS that cannot run.

    ``cfg``: the validated config (defaults filled); ``user_cfg``: the config as the user wrote
    it (which keys were given); ``prediction_zoos``: names of the prediction zoos.
    """
    out = {}
    for study, check in CHECKS.items():
        if not cfg[study]["enabled"]:
            continue
        reason = check(cfg, user_cfg.get(study) or {}, prediction_zoos)
        if reason:
            out[study] = reason
    return out


#: extra-all-zoos' reason for a zoo of one model (scorecard spec 12.2-12.3 compare models).
ONE_MODEL_PARTS = ("one model: label-free and few-label accuracy estimation scored; ranking "
                   "and model selection not applicable")


def scorecard_zoos(
    zoos: list[str], scored: Mapping[str, list[str]], n_models: Mapping[str, int], source: str
) -> tuple[list[str], dict[str, str]]:
    """(zoos the scorecard scores, zoo -> why not for the others), issue 18 item 4 ("the
    scorecard for every zoo"): every zoo with a model and a labelled set to score. A zoo of one
    model is scored on accuracy estimation alone (ranking and selection are not applicable,
    labelfree.scorecard.core.ONE_MODEL); a zoo whose only scored set is the source gets the
    source's sanity rows (scorecard spec 12), all a user with clean data only can have
    (tests/workflow/test_clean_only_zoo.py). A zoo whose labelled sets are all multi-label is
    found only when its labels are read: its scorecard job writes the reason
    (labelfree.scorecard.core.unscored).
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
