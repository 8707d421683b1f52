"""Thin adapter: one zoo's answer from its inference artefacts (labelfree.answer.answer, the
function `labelfree answer` calls too)."""

import logging

from labelfree import answer, store
from labelfree.joblog import log_to
from labelfree.scorecard.artefacts import read_method_outputs

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
zoo, models = sm.params.zoo, list(sm.params.models)
files = store.files_by_testset(sm.input.infer, models, sm.params.groups)
logits, labels = {}, {}
with store.open_inference_files() as read:  # each model's group file opened once, not per set
    for t, path in zip(sm.params.testsets, sm.input.testsets, strict=True):
        logits[t] = store.stack_logits(files[t], t, read)
        # None: unlabelled (a prediction zoo's set without labels); multi-label labels go
        # through: the answer counts them as unlabelled and says so
        labels[t] = store.read_labels(path)
source = sm.params.source if sm.params.source in logits else None
best_path = getattr(sm.input, "best", None)  # absent: no scorecard for this zoo
best = store.read_table(best_path) if best_path else None
# the scorecard's label-free method outputs on its sets (the same arrays): read, not recomputed
known = read_method_outputs(sm.input.method_outputs) if best_path else None
a = answer.answer(
    zoo, models, logits, labels, source, budget=sm.params.budget, seed=sm.params.seed,
    n_boot=sm.params.bootstrap, kinds=dict(sm.params.kinds), level=sm.params.level,
    max_mae=sm.params.max_mae, estimators=list(sm.params.estimators) or None,
    headline=sm.params.headline or None,
    scorecard_line=answer.scorecard_summary(zoo, best, sm.params.scorecard_note), known=known)
answer.save(a, zoo, sm.output.md, sm.output.csv, sm.output.plan)
store.save_figure(answer.figure(a.table), sm.output.png, sm.output.pdf)
logging.info("answer for %s: top model %s on %s; %d inputs to label", zoo, a.top, a.plan_set,
             len(a.plan))
