"""Adapter: every syp test set of the zoo's dataset (rule syp_testsets; docs/syp.md,
reading R11)."""

import logging

from labelfree.joblog import log_to

log_to(snakemake.log[0])  # noqa: F821 (log and tracebacks to the log)

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
