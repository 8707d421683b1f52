"""Thin adapter: the table of every configured zoo, scored by the scorecard or why not."""

from labelfree import store
from labelfree.joblog import log_to
from labelfree.scorecard.report import coverage

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
# each scorecard's which-method-when table carries the reason its job found (multi-label labels)
best = {z: store.read_table(p) for z, p in zip(sm.params.scored, sm.input.best, strict=True)}
table = coverage(sm.params.rows, best)
store.save_table(table, sm.output.csv, title="Scorecard: every zoo, scored or why not")
