"""Thin adapter: the zoo's training split as test set `pace_train`, for PACE Table 12's LSA
(labelfree.pace.run.write_train_set)."""

from labelfree.joblog import log_to
from labelfree.pace.run import write_train_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

write_train_set(sm.input.split, sm.output.train, sm.params.subsample, sm.params.seed)
