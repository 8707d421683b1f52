"""Adapter: train every oracle variant on the meta-sets, all seeds, and score every set
(rule syp_oracle; paper Section 3.4)."""

import logging

from labelfree.joblog import log_to

log_to(snakemake.log[0])  # noqa: F821 (log and tracebacks to the log)

from labelfree.syp.run import train_variant  # noqa: E402

sm = snakemake  # noqa: F821
try:
    for variant, q, weights, js in zip(
        sm.params.variants, sm.output.q, sm.output.weights, sm.output.json, strict=True
    ):
        train_variant(
            indicators=sm.input[0],
            cfg=sm.params.cfg,
            variant_name=variant,
            seeds=sm.params.seeds,
            base_seed=sm.params.seed,
            model=sm.wildcards.model,
            out_npz=q,
            out_weights=weights,
            out_json=js,
            threads=sm.threads,
        )
except Exception:
    logging.getLogger("syp_oracle").exception("syp_oracle failed")
    raise
