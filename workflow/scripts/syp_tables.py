"""Adapter: SYP Tables 1-5, threshold selection, predictions and figures (rule syp_tables)."""

import logging

from labelfree.joblog import log_to

log_to(snakemake.log[0])  # noqa: F821 (log and tracebacks to the log)

from labelfree.syp.report import report_inputs, write_report  # noqa: E402

sm = snakemake  # noqa: F821
try:
    results, groups, params = report_inputs(
        models=list(sm.params.models),
        variants=list(sm.params.variants),
        indicators=sm.input.indicators,
        baselines=sm.input.baselines,
        oracle_npz=sm.input.oracle,
        oracle_json=sm.input.oracle_json,
        info=sm.input.info,
    )
    write_report(results, sm.params.cfg, groups, params, dict(sm.output.items()))
except Exception:
    logging.getLogger("syp_tables").exception("syp_tables failed")
    raise
