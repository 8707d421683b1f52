"""Thin adapter: one PACE experiment over every subject (labelfree.pace.experiment)."""

import logging
import sys

from threadpoolctl import threadpool_limits

from labelfree.pace.experiment import StudyParams, load_subjects, run_experiment, save_run

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = open(sm.log[0], "w", buffering=1)  # noqa: SIM115 (lives for the whole job)
sys.stderr = log_file
logging.basicConfig(stream=log_file, level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(message)s")

with threadpool_limits(sm.threads):
    params = StudyParams.from_config(sm.params.cfg, seed=sm.params.seed)
    rows, timings = run_experiment(sm.wildcards.experiment, load_subjects(sm.input.subjects), params)
save_run(rows, timings, sm.output.rows, sm.output.timings)
