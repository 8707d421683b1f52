"""What the `laf` study runs for a config, decided while Snakemake parses the workflow.

The analysed zoos and clone controls (:func:`plan`, which also checks the ``laf`` config against
the configured zoos), how a zoo's test sets split into independent jobs (:func:`partition`) and
the names of every final table and figure (:data:`TABLES`, :data:`FIGURES`, :func:`name`).
Parse-time code: standard library only (no numpy, scipy or torch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labelfree.config import ConfigError
from labelfree.outputs import POOLED, output_name

#: Stem (docs/outputs.md) -> report subcategory of every final table and figure. Every LaF
#: output pools the analysed zoos (one row or panel per zoo), so its scope is ``all``:
#: ``results/laf/tables/table3-4-all-id.csv``. Captions:
#: workflow/report/laf/{tables,figures}/<stem>.rst.
TABLES = {
    "table3-4-id": "RQ1",
    "table5": "RQ1",
    "table6": "RQ2",
    "table7": "RQ2",
    "table6-by_severity": "RQ2",
    "table3-4-natural": "RQ2",
    "table8": "RQ2",
    "table9-10": "RQ3",
    "fig8": "RQ4",
    "fig9": "RQ4",
    "tableA1": "Appendix",
    "tableA2": "Appendix",
    "extra-efficiency": "Efficiency",
    "extra-checks": "Summary",
}
FIGURES = {
    "fig5": "RQ1",
    "fig6": "RQ1",
    "fig7": "RQ2",
    "table6": "RQ2",
    "fig8": "RQ4",
    "fig9": "RQ4",
    "tableA1": "Appendix",
}

#: The raw files of one analysed zoo (``results/laf/raw/<zoo>/``), written by
#: :func:`labelfree.laf.run.write_raw` and read by :func:`labelfree.laf.report.load_raw`.
RAW_FILES = ("metrics.csv.gz", "testsets.csv", "models.csv", "rq4.csv", "ces_guides.npz")


def name(stem: str) -> str:
    """The file name (no suffix) of a LaF table or figure: ``<id>-all[-<detail>]``."""
    return output_name(stem, POOLED)


#: Job granularities of config key ``laf.jobs``.
JOB_GRANULARITIES = ("zoo", "group", "testset")
#: The one part of a zoo with ``laf.jobs: zoo``.
ZOO_PART = "all"


def partition(testsets: Sequence[str], groups: Sequence[str], by: str) -> dict[str, list[str]]:
    """Parts of a zoo's test sets, in order: part name -> its test sets.

    ``groups[i]``: the test-set group (workflow `testsets` token) of ``testsets[i]``. ``by``:
    ``zoo`` (one part, :data:`ZOO_PART`, with every set: one job per zoo, the default run's
    choice), ``group`` (one part per group) or ``testset`` (one part per test set: the most
    parallel, for clusters at paper scale).
    """
    if by not in JOB_GRANULARITIES:
        raise ValueError(f"laf jobs: {by!r} is not one of {JOB_GRANULARITIES}")
    if len(groups) != len(testsets):
        raise ValueError(f"{len(testsets)} test sets but {len(groups)} groups")
    parts: dict[str, list[str]] = {}
    for testset, group in zip(testsets, groups, strict=True):
        part = {"zoo": ZOO_PART, "group": group, "testset": testset}[by]
        parts.setdefault(part, []).append(testset)
    return parts


def labelled_zoos(
    zoos: list[str], labelled: Mapping[str, list[str]], n_models: Mapping[str, int], study: str,
    min_models: int = 2,
) -> tuple[list[str], dict[str, str]]:
    """(zoos a study can score, zoo -> reason for the others): it scores against labels and
    needs ``min_models`` models (laf ranks two or more; the scorecard scores one model on
    estimation). ``labelled``: zoo -> its labelled test sets."""
    keep, skip = [], {}
    for z in zoos:
        n = n_models.get(z, 0)
        if n < min_models:
            skip[z] = (f"zoo {z!r} has {n} model(s); {study} compares rankings of two or more"
                       if min_models > 1 else f"zoo {z!r} has no model")
        elif not labelled.get(z):
            skip[z] = (f"zoo {z!r} has no labelled test set; {study} scores methods against "
                       "labels (the answer still ranks and estimates without them)")
        else:
            keep.append(z)
    return keep, skip


@dataclass(frozen=True)
class Plan:
    """What the study analyses: ``zoos`` (stored zoos, in order), ``clones`` (clone control name
    -> its ``laf.clones`` entry; built at analysis time from stored predictions, docs/laf.md),
    ``skips`` (zoo or clone control -> why it is left out) and ``skip`` (why the whole study is
    skipped, or None)."""

    zoos: list[str]
    clones: dict[str, dict[str, Any]]
    skips: dict[str, str] = field(default_factory=dict)
    skip: str | None = None

    @property
    def analysed(self) -> list[str]:
        """Every analysed zoo: the stored zoos, then the clone controls."""
        return [*self.zoos, *self.clones]

    def notes(self) -> list[str]:
        """One stderr line per zoo left out while others are analysed."""
        if not self.zoos:
            return []
        return [f"labelfree: laf skips {z}: {why}" for z, why in self.skips.items()]


def check_config(laf: Mapping[str, Any], zoos: Sequence[str]) -> None:
    """Raise :class:`labelfree.config.ConfigError` when ``laf.clones`` or ``laf.zoos`` name a
    zoo that is not configured, or a clone control takes a zoo's name."""
    for c in laf["clones"]:
        for key in ("base", "source"):
            if c[key] not in zoos:
                raise ConfigError(
                    f"laf.clones[{c['name']}].{key} = {c[key]!r} "
                    f"is not a configured zoo ({sorted(zoos)})"
                )
        if c["name"] in zoos:
            raise ConfigError(f"laf.clones name {c['name']!r} is already a zoo")
    for z in laf["zoos"]:
        if z not in zoos:
            raise ConfigError(f"laf.zoos lists {z!r}, not a configured zoo ({sorted(zoos)})")


def plan(
    laf: Mapping[str, Any], zoos: Sequence[str], labelled: Mapping[str, list[str]],
    n_models: Mapping[str, int],
) -> Plan:
    """The study's :class:`Plan` for the ``laf`` config section (validated, defaults filled).

    ``zoos``: every configured zoo; ``labelled``: zoo -> its labelled test sets; ``n_models``:
    zoo -> its number of models. LaF's tables score rankings of two or more models against
    labels: other zoos (one model, or a prediction zoo without labels) are left out, saying so,
    and so is a clone control built from one of them; with nothing left the study skips.
    Raises :class:`labelfree.config.ConfigError` (:func:`check_config`).
    """
    check_config(laf, zoos)
    clones = {c["name"]: c for c in laf["clones"]}
    keep, skips = labelled_zoos(list(laf["zoos"]) or list(zoos), labelled, n_models, "laf")
    for c in list(clones.values()):
        bad = [z for z in (c["base"], c["source"]) if z in skips]
        if bad:
            skips[c["name"]] = f"clone control {c['name']!r} is built from {bad}"
            del clones[c["name"]]
    skip = None
    if not keep and not clones:
        skip = "; ".join(skips.values()) or "no zoo to analyse"
    return Plan(keep, clones, skips, skip)
