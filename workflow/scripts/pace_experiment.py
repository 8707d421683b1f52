"""Thin adapter: one PACE experiment over every subject (labelfree.pace.run; rule
pace_experiment, `pace.jobs: experiment`)."""

from threadpoolctl import threadpool_limits

from labelfree.joblog import log_to
from labelfree.pace.run import FitCache, StudyParams, load_subjects, run_experiment, save_run

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])  # log and tracebacks to the log; progress bars also to the terminal

with threadpool_limits(sm.threads):
    params = StudyParams.from_config(sm.params.cfg, seed=sm.params.seed)
    rows, timings = run_experiment(sm.wildcards.experiment, load_subjects(sm.input.subjects),
                                   params, FitCache())
    save_run(rows, timings, sm.output.rows, sm.output.timings)
