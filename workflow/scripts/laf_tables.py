"""Adapter: each zoo's raw LaF results from its parts, then every table and figure of the LaF
study from them (rule laf_tables)."""

import logging
import os

logging.basicConfig(
    filename=snakemake.log[0],  # noqa: F821
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)

from labelfree.laf.report import write_all  # noqa: E402
from labelfree.laf.run import merge_parts  # noqa: E402

sm = snakemake  # noqa: F821
try:
    for zoo in sm.params.zoos:
        merge = sm.params.merges[zoo]
        merge_parts(merge["parts"], os.path.join(sm.params.raw_dir, zoo), order=merge["order"])
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
