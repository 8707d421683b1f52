"""Thin adapter: data and seed-regime zoos of one alphatrim experiment (pipeline.train_experiment)."""

import logging

from labelfree.alphatrim.pipeline import train_experiment

sm = snakemake  # noqa: F821 (injected by Snakemake)
logging.basicConfig(filename=sm.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(message)s")
inputs = {k: str(v) for k, v in sm.input.items()}
train_experiment(sm.params.name, sm.params.cfg, sm.params.seed, inputs, sm.output.zoo,
                 sm.output.runs, threads=sm.threads)
