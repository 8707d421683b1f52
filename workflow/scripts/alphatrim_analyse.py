"""Thin adapter: alpha-hat, churn, ECE and ensembles of one experiment (pipeline.analyse_experiment)."""

import logging

from labelfree.alphatrim.pipeline import analyse_experiment

sm = snakemake  # noqa: F821 (injected by Snakemake)
logging.basicConfig(filename=sm.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(message)s")
analyse_experiment(sm.params.name, sm.params.cfg, sm.params.study, sm.input.zoo,
                   sm.output.per_model, sm.output.ensembles, sm.output.raw, sm.output.summary,
                   threads=sm.threads)
