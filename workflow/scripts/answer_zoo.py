"""Thin adapter: one zoo's answer from its inference artefacts (labelfree.answer)."""

import logging

import pandas as pd

from labelfree import answer, store
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
zoo, models = sm.params.zoo, list(sm.params.models)
files = store.files_by_testset(sm.input.infer, models, sm.params.groups)
logits, labels = {}, {}
for t, path in zip(sm.params.testsets, sm.input.testsets, strict=True):
    logits[t] = store.stack_logits(files[t], t)
    y = store.read_labels(path)  # None: unlabelled (a prediction zoo's set without labels)
    labels[t] = y if y is not None and y.ndim == 1 else None  # multi-label: no accuracy
source = sm.params.source if sm.params.source in logits else None
table, plan, first, top = answer.build(
    zoo, models, logits, labels, source, sm.params.budget, sm.params.seed,
    n_boot=sm.params.bootstrap, kinds=dict(sm.params.kinds), level=sm.params.level,
    max_mae=sm.params.max_mae, estimators=list(sm.params.estimators) or None)
store.save_table(table, sm.output.csv, title=f"Answer for zoo {zoo}")
store.save_table(pd.DataFrame({"testset": first, "input_index": plan}), sm.output.plan,
                 title=f"Inputs to label for {top} on {first} (PACE)")
best_path = getattr(sm.input, "best", None)  # absent: no scorecard for this zoo
best = store.read_table(best_path) if best_path else None
card = answer.scorecard_summary(zoo, best, sm.params.scorecard_note)
with store.atomic_path(sm.output.md) as tmp:
    tmp.write_text(answer.render(zoo, table, plan, first, top, scorecard_line=card,
                                 max_mae=sm.params.max_mae))
store.save_figure(answer.figure(table), sm.output.png, sm.output.pdf)
logging.info("answer for %s: top model %s on %s; %d inputs to label", zoo, top, first, len(plan))
