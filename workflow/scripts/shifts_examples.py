"""Thin adapter: the example figure of one dataset's shifted test sets (labelfree.shifts)."""

from labelfree.joblog import log_to
from labelfree.shifts.figures import write_example_figure

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

p = sm.params
write_example_figure(
    sm.input.id, sm.input.corrupted, sm.input.natural, p.corruptions, p.severities, p.natural,
    sm.output.png, sm.output.pdf, index=p.index,
)
