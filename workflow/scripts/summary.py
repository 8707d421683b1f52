"""Thin adapter: gather the studies' checks tables into results/summary (labelfree.summary)."""

import logging

from labelfree import summary
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
meta = summary.meta_for(sm.params.config_name, "", sm.params.repo)
meta["config_digest"] = sm.params.digest
table = summary.write(dict(sm.params.checks), sm.output.csv, sm.output.md, meta,
                      best=dict(sm.params.best), methods_path=sm.output.methods)
logging.info("summary: %d checks from %d tables", len(table), len(sm.params.checks))
