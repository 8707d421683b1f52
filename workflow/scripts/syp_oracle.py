"""Adapter: train every oracle variant on the meta-sets, all seeds, and score every set
(rule syp_oracle; paper Section 3.4)."""

import logging

from labelfree.joblog import log_to

log_to(snakemake.log[0])  # noqa: F821 (log and tracebacks to the log)

from labelfree.syp.run import train_variants  # noqa: E402

sm = snakemake  # noqa: F821
try:
    train_variants(
        indicators=sm.input[0],
        cfg=sm.params.cfg,
        variant_names=sm.params.variants,
        seeds=sm.params.seeds,
        base_seed=sm.params.seed,
        model=sm.wildcards.model,
        out_npz=sm.output.q,
        out_weights=sm.output.weights,
        out_json=sm.output.json,
        threads=sm.threads,
    )
except Exception:
    logging.getLogger("syp_oracle").exception("syp_oracle failed")
    raise
