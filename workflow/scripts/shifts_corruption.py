"""Thin adapter: one corruption of one dataset, all configured severities (labelfree.shifts)."""

from labelfree.joblog import log_to
from labelfree.shifts.suite import write_corruption
from labelfree.store import read_image_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

p = sm.params
clean = read_image_set(sm.input.id)
write_corruption(
    clean,
    p.corruption,
    p.severities,
    sm.output,
    seed=p.seed,
    dataset=p.dataset,
    params=p.table,
    released=p.released or None,
    single_level_severity=p.single_level_severity,
    fallback=p.fallback,
)
