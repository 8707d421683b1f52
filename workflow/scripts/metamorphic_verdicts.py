"""Thin adapter: verdicts of every model of one zoo (labelfree.metamorphic.run.zoo_verdicts)."""

import logging

import pandas as pd

from labelfree.joblog import log_to
from labelfree.metamorphic.run import zoo_verdicts
from labelfree.store import atomic_path, save_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

summary, images = zoo_verdicts(
    zoo=sm.params.zoo,
    role=sm.params.role,
    sheet=pd.DataFrame(sm.params.sheet),
    bases=sm.params.bases,
    base_paths=sm.params.base_paths,
    infer={(t, m): p for t, m, p in sm.params.infer},
    cfg=sm.params.metamorphic,
)
save_table(summary, sm.output.summary, md_path=sm.output.summary + ".md",
           title=f"metamorphic verdict summary of zoo {sm.params.zoo}")
with atomic_path(sm.output.verdicts, suffix=".gz") as tmp:
    images.to_csv(tmp, index=False, compression="gzip", float_format="%.6g")
logging.info("%d summary rows, %d per-image rows", len(summary), len(images))
