"""Thin adapter: accuracy of every model on every test set of a zoo, as table and heatmap
(labelfree.accuracy.write_accuracy_table)."""

from labelfree.accuracy import write_accuracy_table
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

o = sm.output
write_accuracy_table(
    sm.wildcards.zoo, sm.params.models, sm.params.testsets, sm.params.groups,
    sm.params.infer_pattern, sm.input.testsets, sm.input.meta, o.csv, o.md, o.png, o.pdf,
)
