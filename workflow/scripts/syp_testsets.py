"""Adapter: every syp test set of the zoo's dataset (rule syp_testsets; docs/syp.md,
reading R11)."""

import logging

logging.basicConfig(
    filename=snakemake.log[0],  # noqa: F821
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)

from labelfree.syp.run import write_testsets  # noqa: E402

sm = snakemake  # noqa: F821
try:
    write_testsets(
        sm.input.train,
        sm.input.source,
        getattr(sm.input, "holdout", None),  # None: carved out of the source split
        sm.params.out_dir,
        sm.output.info,
        sm.params.cfg,
        sm.params.seed,
    )
except Exception:
    logging.getLogger("syp_testsets").exception("syp_testsets failed")
    raise
