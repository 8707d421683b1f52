"""Thin adapter: tables, figures and checks A-H (labelfree.metamorphic.tables.write_report)."""

import logging
import sys

import pandas as pd

from labelfree.metamorphic.tables import write_report

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = open(sm.log[0], "w", buffering=1)  # noqa: SIM115 (lives for the whole job)
sys.stderr = log_file
logging.basicConfig(
    stream=log_file, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True
)

summary = pd.concat([pd.read_csv(p) for p in sm.input.summaries], ignore_index=True)
images = pd.concat([pd.read_csv(p) for p in sm.input.verdicts], ignore_index=True)
res = write_report(summary, images, sm.params.mm, sm.params.out_dir, sm.params.gallery)
for c in res["checks"]:
    logging.info("check %s (%s): %s = %s [%s] -> %s", c["check"], "hard" if c["hard"] else "soft",
                 c["what"], c["value"], c["threshold"], "PASS" if c["pass"] else "FAIL")
