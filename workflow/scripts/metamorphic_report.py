"""Thin adapter: tables, figures and checks A-H (labelfree.metamorphic.report.write_report)."""

import logging

import pandas as pd

from labelfree.joblog import log_to
from labelfree.metamorphic.report import write_report

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

summary = pd.concat([pd.read_csv(p) for p in sm.input.summaries], ignore_index=True)
images = pd.concat([pd.read_csv(p) for p in sm.input.verdicts], ignore_index=True)
res = write_report(summary, images, sm.params.metamorphic, sm.params.out_dir, sm.params.gallery)
for c in res["checks"]:
    logging.info("check %s (%s): %s = %s [%s] -> %s %s", c["check"], c["kind"], c["what"], c["value"],
                 c["threshold"], "holds" if c["holds"] else "does not hold", c["switch"] or "")
