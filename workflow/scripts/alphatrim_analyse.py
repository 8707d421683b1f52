"""Thin adapter: alpha-hat, churn, ECE and ensembles of one experiment (labelfree.alphatrim.run.analyse_experiment)."""

from labelfree.alphatrim.run import analyse_experiment
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])  # log and tracebacks to the log; progress bars also to the terminal
analyse_experiment(sm.params.name, sm.params.cfg, sm.params.study, sm.input.zoo,
                   sm.output.per_model, sm.output.ensembles, sm.output.raw, sm.output.summary,
                   threads=sm.threads)
