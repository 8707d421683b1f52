"""Thin adapter: one zoo's scorecard from its inference artefacts (labelfree.scorecard)."""

import logging

import numpy as np

from labelfree import store
from labelfree.answer import softmax
from labelfree.joblog import log_to
from labelfree.scorecard import report, score_zoo

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
models = list(sm.params.models)
files = store.files_by_testset(sm.input.infer, models, sm.params.groups)
logits, probs, labels, kinds = {}, {}, {}, {}
for t, path in zip(sm.params.testsets, sm.input.testsets, strict=True):
    y = store.read_labels(path)
    if y is None or y.ndim != 1:
        logging.info("%s: %s test set, not scored", t, "unlabelled" if y is None else "multi-label")
        continue
    logits[t] = store.stack_logits(files[t], t)
    probs[t] = softmax(logits[t].astype(np.float64))
    labels[t], kinds[t] = y, sm.params.kinds[t]
source = sm.params.source if sm.params.source in probs else None
card = score_zoo(probs, labels, kinds, source, logits=logits, model_names=models,
                 budgets=sm.params.budgets, n_runs=sm.params.runs, seed=sm.params.seed,
                 exclude=sm.params.exclude)
for name in ("estimation", "ranking", "fewlabel"):
    store.save_table(card.summary[name], getattr(sm.output, name),
                     title=f"Scorecard {sm.params.zoo}: {name}")
store.save_table(report.best_per_kind(card), sm.output.best,
                 title=f"Scorecard {sm.params.zoo}: which method when")
with store.atomic_path(sm.output.png) as tmp:
    report.figure(card, tmp, sm.params.zoo)
with store.atomic_path(sm.output.pdf) as tmp:
    report.figure(card, tmp, sm.params.zoo)
logging.info("scorecard %s: %d failures", sm.params.zoo, len(card.failures))
