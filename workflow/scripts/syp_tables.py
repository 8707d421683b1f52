"""Adapter: SYP Tables 1-5, threshold selection, predictions and figures (rule syp_tables)."""

import logging

logging.basicConfig(
    filename=snakemake.log[0],  # noqa: F821
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)

from labelfree import store  # noqa: E402
from labelfree.syp.report import load_results, write_report  # noqa: E402

sm = snakemake  # noqa: F821
try:
    models, variants = list(sm.params.models), list(sm.params.variants)
    n_v = len(variants)
    oracle = {
        m: dict(zip(variants, sm.input.oracle[i * n_v : (i + 1) * n_v], strict=True))
        for i, m in enumerate(models)
    }
    params = {}
    for i, m in enumerate(models):
        for v, path in zip(variants, sm.input.oracle_json[i * n_v : (i + 1) * n_v], strict=True):
            params[(m, v)] = int(store.load_json(path)["params"])
    info = store.load_json(sm.input.info)
    groups = {name: rec["group"] for name, rec in info["val"].items()}
    results = load_results(models, sm.input.indicators, sm.input.baselines, oracle)
    out = {
        "table1": sm.output.table1,
        "table2": sm.output.table2,
        "table3": sm.output.table3,
        "table4": sm.output.table4,
        "table5": sm.output.table5,
        "tau": sm.output.tau,
        "predictions": sm.output.predictions,
        "meta_fit": sm.output.meta_fit,
        "fig_scatter": sm.output.fig_scatter,
        "fig_meta": sm.output.fig_meta,
        "fig_val": sm.output.fig_val,
        "fig10": sm.output.fig10,
        "fig_fig10": sm.output.fig_fig10,
        "checks": sm.output.checks,
    }
    write_report(results, sm.params.cfg, groups, params, out)
except Exception:
    logging.getLogger("syp_tables").exception("syp_tables failed")
    raise
