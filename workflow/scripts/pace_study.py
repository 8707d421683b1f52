"""Thin adapter: PACE's study job (`pace.jobs: study`): every subject gathered into one npz and
Table 1 (labelfree.pace.run.build_subjects; docs/pace.md, readings R1, R8, R16), then the six
experiments in turn over them (labelfree.pace.run.run_experiment), each step logged to its own
file and every file written as the separate jobs (pace_subjects, pace_experiment) write it."""

from threadpoolctl import threadpool_limits

from labelfree.joblog import log_to
from labelfree.pace.run import (
    FitCache,
    StudyParams,
    build_subjects,
    load_subjects,
    run_experiment,
    save_run,
    write_subjects,
)

sm = snakemake  # noqa: F821 (injected by Snakemake)
p = sm.params

with threadpool_limits(sm.threads):
    log_to(sm.log.subjects)  # log and tracebacks to the log; progress bars also to the terminal
    subjects = build_subjects(p.subjects, sm.input.infer, sm.input.testsets, sm.input.train,
                              sm.input.pool, p.regression, p.mutation, p.seed)
    write_subjects(subjects, sm.output.npz, sm.output.csv)
    del subjects

    log_to(sm.log.experiments)
    params = StudyParams.from_config(p.cfg, seed=p.seed)
    fits = FitCache()  # a fit two experiments share runs once (the same rows)
    for name, rows_path, timings_path in zip(p.experiments, sm.output.rows, sm.output.timings,
                                             strict=True):
        # subjects read back from the npz for each, as the per-experiment jobs read them
        rows, timings = run_experiment(name, load_subjects(sm.output.npz), params, fits)
        save_run(rows, timings, rows_path, timings_path)
