"""Adapter: indicators, baseline scores and predictions of one classifier, then every oracle
variant trained on the meta-sets, all seeds, scoring every set (rule syp_oracle; paper Sections
3.3-3.4). Each step logs to its own file."""

import logging

from threadpoolctl import threadpool_limits

from labelfree.joblog import log_to

sm = snakemake  # noqa: F821
log_to(sm.log.indicators)  # log and tracebacks to the step's log, progress bars also shown

from labelfree.syp.run import model_indicators, train_variants  # noqa: E402

try:
    kinds = dict(sm.params.kinds)
    # one BLAS thread, whatever the oracle's threads: the rotation head's fit is the one-thread
    # fit at every syp.threads
    with threadpool_limits(limits=1):
        model_indicators(
            infer=dict(zip(sm.params.names, sm.input.infer, strict=True)),
            testsets=dict(zip(kinds, sm.input.testsets, strict=True)),
            id_infer=sm.input.id_infer,
            id_testset=sm.input.id_testset,
            kinds=kinds,
            cfg=sm.params.indicators,
            seed=sm.params.seed,
            out_npz=sm.output.npz,
            out_baselines=sm.output.baselines,
        )
except Exception:
    logging.getLogger("syp_oracle").exception("syp_oracle (indicators) failed")
    raise

log_to(sm.log.oracle)
try:
    train_variants(
        indicators=sm.output.npz,
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
