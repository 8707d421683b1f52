"""Thin adapter: gather every PACE subject (features, item scores, confidences) into one npz and
Table 1 (labelfree.pace.run.build_subjects; docs/pace.md, readings R1, R8, R16)."""

from threadpoolctl import threadpool_limits

from labelfree.joblog import log_to
from labelfree.pace.run import build_subjects, write_subjects

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

with threadpool_limits(sm.threads):
    subjects = build_subjects(sm.params.subjects, sm.input.infer, sm.input.testsets,
                              sm.input.train, sm.input.pool, sm.params.regression,
                              sm.params.mutation, sm.params.seed)
    write_subjects(subjects, sm.output.npz, sm.output.csv)
