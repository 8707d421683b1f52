"""Adapter: one zoo's raw LaF results from its parts (rule laf_zoo)."""

import logging

logging.basicConfig(
    filename=snakemake.log[0],  # noqa: F821
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)

from labelfree.laf.run import merge_parts  # noqa: E402

sm = snakemake  # noqa: F821
try:
    merge_parts(sm.input.parts, sm.params.out_dir, order=sm.params.order)
except Exception:
    logging.getLogger("laf_zoo").exception("laf_zoo failed")
    raise
