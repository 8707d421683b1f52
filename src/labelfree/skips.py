"""Which enabled studies skip this run, decided at parse time (standard library only).

A study that cannot run on what the config gives it says so in one line and is skipped, instead
of stopping the whole run (and the answers of every zoo) with an error. Each study decides its
own case in its plan (``labelfree.<study>.plan.skip_reason``); this module asks the studies that
run on zoos built for them. laf and the scorecard skip zoos without labels in their own rule
files (:func:`labelfree.laf.plan.labelled_zoos`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from labelfree.alphatrim.plan import skip_reason as alphatrim_skip_reason
from labelfree.metamorphic.plan import skip_reason as metamorphic_skip_reason
from labelfree.pace.plan import skip_reason as pace_skip_reason
from labelfree.syp.plan import skip_reason as syp_skip_reason

SkipReason = Callable[[Mapping[str, Any], Mapping[str, Any], Collection[str]], "str | None"]

#: study -> its ``skip_reason(cfg, user, prediction_zoos)``, in the order they are reported.
SKIP_REASONS: dict[str, SkipReason] = {
    "pace": pace_skip_reason,
    "syp": syp_skip_reason,
    "alphatrim": alphatrim_skip_reason,
    "metamorphic": metamorphic_skip_reason,
}


def fixed_zoo_skips(
    cfg: Mapping[str, Any], user_cfg: Mapping[str, Any], prediction_zoos: Collection[str]
) -> dict[str, str]:
    """study -> one-line reason, for every enabled study of :data:`SKIP_REASONS` that cannot run.

    ``cfg``: the validated config (defaults filled); ``user_cfg``: the config as the user wrote
    it (which keys were given); ``prediction_zoos``: names of the prediction zoos.
    """
    out = {}
    for study, reason_of in SKIP_REASONS.items():
        if not cfg[study]["enabled"]:
            continue
        reason = reason_of(cfg, user_cfg.get(study) or {}, prediction_zoos)
        if reason:
            out[study] = reason
    return out
