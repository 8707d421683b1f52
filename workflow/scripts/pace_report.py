"""Thin adapter: PACE Tables 2-9 and 11, Figures 4-8, the conclusions and checks, the errors and
this zoo's cross-dataset rows (labelfree.pace.report.write_report)."""

from labelfree.joblog import log_to
from labelfree.pace.report import write_report

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

write_report(sm.input.rows, sm.input.timings, sm.input.meta, dict(sm.output.items()),
             sm.params.zoo, sm.params.dataset)
