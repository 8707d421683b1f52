"""Adapter: indicators, baseline scores and predictions of one classifier (rule syp_indicators)."""

import logging

from labelfree.joblog import log_to

log_to(snakemake.log[0])  # noqa: F821 (log and tracebacks to the log, progress bars also shown)

from labelfree.syp.run import model_indicators  # noqa: E402

sm = snakemake  # noqa: F821
try:
    kinds = dict(sm.params.kinds)
    model_indicators(
        infer=dict(zip(sm.params.names, sm.input.infer, strict=True)),
        testsets=dict(zip(kinds, sm.input.testsets, strict=True)),
        id_infer=sm.input.id_infer,
        id_testset=sm.input.id_testset,
        kinds=kinds,
        cfg=sm.params.cfg,
        seed=sm.params.seed,
        out_npz=sm.output.npz,
        out_baselines=sm.output.baselines,
    )
except Exception:
    logging.getLogger("syp_indicators").exception("syp_indicators failed")
    raise
