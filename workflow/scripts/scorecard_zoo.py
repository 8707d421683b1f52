"""Thin adapter: one zoo's scorecard from its inference artefacts (labelfree.scorecard)."""

import logging

from labelfree import store
from labelfree.joblog import log_to
from labelfree.scorecard import report
from labelfree.scorecard.artefacts import MethodOutputs, model_sizes, read_zoo, save_method_outputs
from labelfree.scorecard.core import score_zoo, unscored

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
models = list(sm.params.models)
files = store.files_by_testset(sm.input.infer, models, sm.params.groups)
z = read_zoo(files, sm.params.testsets, sm.input.testsets, sm.params.kinds, sm.params.features)
logging.info("features for Dispersion/FD: %s", sm.params.features or "none")
source = sm.params.source if sm.params.source in z.probs else None
if z.probs:
    card = score_zoo(z.probs, z.labels, z.kinds, source, logits=z.logits, features=z.features,
                     model_names=models, budgets=sm.params.budgets, n_runs=sm.params.runs,
                     seed=sm.params.seed, exclude=sm.params.exclude,
                     model_sizes=model_sizes(sm.input.meta), workers=sm.threads)
else:  # e.g. multi-label labels only: the tables say why (labelfree.scorecard.core.unscored)
    card = unscored(z.why_unscored())
    logging.info("scorecard %s: not scored: %s", sm.params.zoo, card.unscored)
for name in ("estimation", "ranking", "fewlabel"):
    store.save_table(card.summary[name], getattr(sm.output, name),
                     title=f"Scorecard {sm.params.zoo}: {name}")
store.save_table(report.best_per_kind(card), sm.output.best,
                 title=f"Scorecard {sm.params.zoo}: which method when")
# the label-free methods' outputs, for the zoo's answer (read there, not recomputed)
save_method_outputs(sm.output.method_outputs, MethodOutputs(tuple(models), card.source, card.outputs))
with store.atomic_path(sm.output.png) as png, store.atomic_path(sm.output.pdf) as pdf:
    report.figure(card, png, sm.params.zoo, also=[pdf])
logging.info("scorecard %s: %d failures", sm.params.zoo, len(card.failures))
