"""Thin adapter: PACE Table 12, CSS-COV vs PACE (labelfree.pace.surprise; spec 3.3).

LSA of every pool subject in params.subjects from its model's LHL activations on the training
split (test set `pace_train`, written by inference), CSS-COV rows over the study's budgets and
repetitions, and the table with the main experiment's PACE and CSS rows.
"""

import logging

import pandas as pd

from labelfree.joblog import log_to
from labelfree.pace.experiment import StudyParams, errors, load_subjects
from labelfree.pace.surprise import css_cov_rows, fit_lsa, lsa, strata_summary, table_css_cov
from labelfree.store import read_features, read_logits, read_table, save_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
log = logging.getLogger("pace_css_cov")

params = StudyParams.from_config(sm.params.cfg, seed=sm.params.seed)
by_name = {s.name: s for s in load_subjects(sm.input.subjects)}
rows, diag = [], []
for name, train in zip(sm.params.subjects, sm.input.train, strict=True):
    s = by_name[name]
    logits = read_logits(train, "pace_train")
    model = fit_lsa(read_features(train, "penultimate", "pace_train"), logits.argmax(axis=1),
                    logits.shape[1], sm.params.var_threshold)
    surprise = lsa(model, s.features["LHL"], s.features["CON"].argmax(axis=1))
    for c, why in model.missing.items():
        log.info("%s: class %d has no KDE (LSA = inf for its inputs): %s", name, c, why)
    rows += css_cov_rows(s, surprise, params)
    diag.append(strata_summary(name, s.scores, surprise, model, tuple(params.css["cuts"])))
    log.info("%s: %s", name, diag[-1])

cov = pd.DataFrame(rows)
cov.to_csv(sm.output.rows, index=False, float_format="%.6g")
pd.DataFrame(diag).to_csv(sm.output.strata, index=False, float_format="%.6g")
main = read_table(sm.input.main)
main = main[main.subject.isin(sm.params.subjects)]
err = errors(pd.concat([main, cov], ignore_index=True))
save_table(table_css_cov(err, list(sm.params.subjects)), sm.output.csv, sm.output.md,
           float_format="%.3f",
           title="PACE Table 12: CSS-COV (LSA strata) vs PACE, MSE (%) per budget; "
                 "Im = PACE's mean relative improvement (spec 4.2); CSS (confidence strata) for reference")
