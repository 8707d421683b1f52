"""What the workflow needs of LaF at parse time, light enough for the Snakefile (no numpy,
scipy or torch): how a zoo's analysis splits into independent jobs (issue 15)."""

from __future__ import annotations

from collections.abc import Sequence

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
