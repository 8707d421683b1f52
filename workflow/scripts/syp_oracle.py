"""Adapter: train one oracle variant on the meta-sets, all seeds, and score every set
(rule syp_oracle; spec 2.7-2.10)."""

import logging

logging.basicConfig(
    filename=snakemake.log[0],  # noqa: F821
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)

from labelfree.syp.study import train_variant  # noqa: E402

sm = snakemake  # noqa: F821
try:
    train_variant(
        indicators=sm.input[0],
        cfg=sm.params.cfg,
        variant_name=sm.wildcards.variant,
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
