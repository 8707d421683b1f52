"""Thin adapter: PACE Table 12, CSS-COV vs PACE (labelfree.pace.run.css_cov,
labelfree.pace.report.write_table12).

LSA of every pool subject in params.subjects from its model's LHL activations on the training
split (test set `pace_train`, written by inference), CSS-COV rows over the study's budgets and
repetitions, and the table with the main experiment's PACE and CSS rows.
"""

from labelfree.joblog import log_to
from labelfree.pace.report import write_table12
from labelfree.pace.run import StudyParams, css_cov, load_subjects

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

params = StudyParams.from_config(sm.params.cfg, seed=sm.params.seed)
cov, strata = css_cov(load_subjects(sm.input.subjects), sm.params.subjects, sm.input.train,
                      sm.params.var_threshold, params)
cov.to_csv(sm.output.rows, index=False, float_format="%.6g")
strata.to_csv(sm.output.strata, index=False, float_format="%.6g")
write_table12(cov, sm.input.main, sm.params.subjects, sm.output.csv, sm.output.md)
