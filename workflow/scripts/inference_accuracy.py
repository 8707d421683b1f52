"""Thin adapter: accuracy of every model on every test set of a zoo, as table and heatmap."""

import logging

from labelfree.accuracy import accuracy_heatmap, accuracy_long, accuracy_wide
from labelfree.joblog import log_to
from labelfree.store import load_json, save_figure, save_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

zoo = sm.wildcards.zoo
grid = [
    [sm.params.infer_pattern.format(model=m, group=sm.params.groups[t]) for t in sm.params.testsets]
    for m in sm.params.models
]
long = accuracy_long(sm.params.models, sm.params.testsets, grid, list(sm.input.testsets))
wide = accuracy_wide(long, [load_json(p) for p in sm.input.meta])
save_table(
    wide,
    sm.output.csv,
    sm.output.md,
    title=f"Accuracy of every model of zoo '{zoo}' (rows) on every test set (columns)",
)
fig = accuracy_heatmap(wide, sm.params.testsets, title=f"zoo {zoo}: accuracy per test set")
save_figure(fig, sm.output.png, sm.output.pdf)
logging.info("%d models x %d test sets; mean accuracy %.4f", len(wide), len(sm.params.testsets), long["accuracy"].mean())
