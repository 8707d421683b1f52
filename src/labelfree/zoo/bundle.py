"""Bundles: which models of a zoo share one job (ARCHITECTURE.md, job granularity; docs/zoo.md).

The model is the unit of work; a zoo setting ``bundle`` groups models into jobs:

- ``model``: one model per job (paper configs; a cluster runs the zoo's models in parallel);
- ``zoo``: the whole zoo in one job (tiny local zoos, where starting a job costs more than
  training its models);
- an integer ``B >= 1``: ``B`` bundles; a model's bundle is ``sha1(model id) mod B``.

The assignment is stable: it depends on the model's own id and ``B`` only, never on the other
rows or their order, so adding or removing a row changes one bundle and leaves every other
bundle's job (its models, parameters and outputs) as it was. This module is imported when the
Snakefile is parsed: standard library only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

#: Bundle name of a zoo trained in one job (``bundle: zoo``).
WHOLE_ZOO = "all"


class BundleError(ValueError):
    """A bad ``bundle`` setting; the message names the zoo and the value."""


def bundle_count(zoo: str, setting: str | int) -> int | None:
    """Number of hash bundles of a zoo: ``None`` for ``model``, 1 for ``zoo``, else ``B``."""
    if setting == "model":
        return None
    if setting == "zoo":
        return 1
    if isinstance(setting, bool) or not isinstance(setting, int) or setting < 1:
        raise BundleError(
            f"zoos.{zoo}.bundle = {setting!r}: use `model`, `zoo` or an integer >= 1"
        )
    return setting


def hash_bundle(model: str, count: int) -> int:
    """The bundle index of ``model`` among ``count`` bundles: sha1 of its id modulo ``count``."""
    digest = hashlib.sha1(model.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count


def assign_bundles(zoo: str, models: Sequence[str], setting: str | int) -> dict[str, list[str]]:
    """Bundle name -> model ids (sheet order within a bundle); empty bundles are left out.

    Names: the model id itself for ``model``; ``all`` for one bundle; ``b{k}of{B}`` otherwise
    (``B`` in the name, so changing the bundle count never reuses a name for other models).
    """
    count = bundle_count(zoo, setting)
    if count is None:
        return {m: [m] for m in models}
    if count == 1:
        return {WHOLE_ZOO: list(models)} if models else {}
    out: dict[str, list[str]] = {}
    for m in models:
        out.setdefault(f"b{hash_bundle(m, count)}of{count}", []).append(m)
    return dict(sorted(out.items(), key=lambda kv: int(kv[0][1:].split("of")[0])))
