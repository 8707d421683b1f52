"""Thin adapter: the PACE cross-dataset table over every zoo's rows (labelfree.pace.report)."""

import logging

from labelfree.joblog import log_to
from labelfree.pace.report import table_cross_dataset
from labelfree.store import read_table, save_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

parts = [read_table(p) for p in sm.input.rows]
logging.info("cross-dataset rows from %d run(s): %s", len(parts), list(sm.input.rows))
save_table(table_cross_dataset(parts), sm.output.csv, sm.output.md, float_format="%.3f",
           title="PACE cross-dataset table (span of Tables 2-5): MSE (%) per zoo, subject and budget")
