"""What the workflow needs of LaF at parse time, light enough for the Snakefile (no numpy,
scipy or torch): how a zoo's analysis splits into independent jobs (issue 15)."""

from __future__ import annotations

from collections.abc import Sequence

from labelfree.outputs import POOLED, output_name

#: Stem (docs/outputs.md) -> report subcategory of every final table and figure. Every LaF
#: output pools the analysed zoos (one row or panel per zoo), so its scope is ``all``:
#: ``results/laf/tables/table3-4-all-id.csv``. Captions: workflow/report/laf/{tables,figures}/<stem>.rst.
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


def name(stem: str) -> str:
    """The file name (no suffix) of a LaF table or figure: ``<id>-all[-<detail>]``."""
    return output_name(stem, POOLED)


#: Job granularities of config key ``laf.jobs``.
JOB_GRANULARITIES = ("group", "testset")


def partition(testsets: Sequence[str], groups: Sequence[str], by: str) -> dict[str, list[str]]:
    """Parts of a zoo's test sets, in order: part name -> its test sets.

    ``groups[i]``: the test-set group (workflow `testsets` token) of ``testsets[i]``. ``by``:
    ``group`` (one part per group: few jobs, the default run's choice) or ``testset`` (one part
    per test set: the most parallel, for clusters at paper scale).
    """
    if by not in JOB_GRANULARITIES:
        raise ValueError(f"laf jobs: {by!r} is not one of {JOB_GRANULARITIES}")
    if len(groups) != len(testsets):
        raise ValueError(f"{len(testsets)} test sets but {len(groups)} groups")
    parts: dict[str, list[str]] = {}
    for name, group in zip(testsets, groups, strict=True):
        parts.setdefault(name if by == "testset" else group, []).append(name)
    return parts
