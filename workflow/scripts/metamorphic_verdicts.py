"""Thin adapter: verdicts of every model of every zoo of the study, one zoo after the other, each
with its own log (labelfree.metamorphic.run.zoo_verdicts)."""

import logging

import pandas as pd

from labelfree.joblog import log_to
from labelfree.metamorphic.run import zoo_verdicts
from labelfree.store import atomic_path, save_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
for z, log_path, summary_path, verdicts_path in zip(
    sm.params.zoos, sm.log, sm.output.summary, sm.output.verdicts, strict=True
):
    log_to(log_path)
    try:
        summary, images = zoo_verdicts(
            zoo=z["zoo"],
            role=z["role"],
            sheet=pd.DataFrame(z["sheet"]),
            bases=z["bases"],
            base_paths=z["base_paths"],
            infer={(t, m): p for t, m, p in z["infer"]},
            cfg=sm.params.metamorphic,
        )
        save_table(summary, summary_path, md_path=summary_path + ".md",
                   title=f"metamorphic verdict summary of zoo {z['zoo']}")
        with atomic_path(verdicts_path, suffix=".gz") as tmp:
            images.to_csv(tmp, index=False, compression="gzip", float_format="%.6g")
        logging.info("%d summary rows, %d per-image rows", len(summary), len(images))
    except Exception:
        logging.getLogger("metamorphic_verdicts").exception("metamorphic_verdicts failed")
        raise
