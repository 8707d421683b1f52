"""Thin adapter: PACE experiments over every subject (labelfree.pace.run): the rule's one
experiment (pace_experiment), or every experiment in turn (pace_experiments, `pace.jobs: study`),
each written as its own job would write it."""

from threadpoolctl import threadpool_limits

from labelfree.joblog import log_to
from labelfree.pace.run import FitCache, StudyParams, load_subjects, run_experiment, save_run

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])  # log and tracebacks to the log; progress bars also to the terminal

experiments = getattr(sm.params, "experiments", None)
if experiments is None:  # one experiment: its wildcard, one rows file and one timings file
    experiments, rows_paths, timing_paths = (
        [sm.wildcards.experiment], [sm.output.rows], [sm.output.timings]
    )
else:
    rows_paths, timing_paths = list(sm.output.rows), list(sm.output.timings)
with threadpool_limits(sm.threads):
    params = StudyParams.from_config(sm.params.cfg, seed=sm.params.seed)
    fits = FitCache()  # a fit two experiments share runs once (the same rows)
    for name, rows_path, timings_path in zip(experiments, rows_paths, timing_paths, strict=True):
        # subjects read afresh for each, as its own job reads them
        rows, timings = run_experiment(name, load_subjects(sm.input.subjects), params, fits)
        save_run(rows, timings, rows_path, timings_path)
