"""Thin adapter: PACE's report job, one step after another, each logged to its own file:
Tables 2-9 and 11, Figures 4-8, the conclusions and checks, the errors and this zoo's
cross-dataset rows (labelfree.pace.report.write_report); the cross-dataset table over those rows
and every other run's (table_cross_dataset); and, when on, Table 12, CSS-COV vs PACE
(labelfree.pace.run.css_cov, labelfree.pace.report.write_table12: LSA of every pool subject from
its model's LHL activations on the training split, test set `pace_train`)."""

import logging

from labelfree.joblog import log_to
from labelfree.pace.report import table_cross_dataset, write_report, write_table12
from labelfree.pace.run import StudyParams, css_cov, load_subjects
from labelfree.store import read_table, save_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
out, p = dict(sm.output.items()), sm.params  # key -> path

log_to(sm.log.report)
write_report(sm.input.rows, sm.input.timings, sm.input.meta,
             {k: out[k] for k in p.report_keys}, p.zoo, p.dataset)

log_to(sm.log.cross_dataset)
cross = [out["cross_rows"], *sm.input.cross_others]  # this run's rows first
logging.info("cross-dataset rows from %d run(s): %s", len(cross), cross)
save_table(table_cross_dataset([read_table(c) for c in cross]), out["cross_csv"], out["cross_md"],
           float_format="%.3f",
           title="PACE cross-dataset table (span of Tables 2-5): MSE (%) per zoo, subject and budget")

if "cov_rows" in out:
    log_to(sm.log.css_cov)
    params = StudyParams.from_config(p.cov_cfg, seed=p.seed)
    main = next(r for r in sm.input.rows if r.endswith("/main.csv"))
    cov, strata = css_cov(load_subjects(sm.input.subjects), p.cov_subjects, sm.input.train,
                          p.var_threshold, params)
    cov.to_csv(out["cov_rows"], index=False, float_format="%.6g")
    strata.to_csv(out["cov_strata"], index=False, float_format="%.6g")
    write_table12(cov, main, p.cov_subjects, out["cov_csv"], out["cov_md"])
