"""Adapter: every table and figure of the LaF study from the per-zoo raw results (rule laf_tables)."""

import logging

logging.basicConfig(
    filename=snakemake.log[0],  # noqa: F821
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)

from labelfree.laf.report import write_all  # noqa: E402

sm = snakemake  # noqa: F821
try:
    write_all(
        sm.params.zoos,
        sm.params.raw_dir,
        sm.params.tables_dir,
        sm.params.figures_dir,
        ks=tuple(sm.params.laf["ks"]),
    )
except Exception:
    logging.getLogger("laf_tables").exception("laf_tables failed")
    raise
