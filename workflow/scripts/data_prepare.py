"""Thin adapter: build one dataset and write all its splits (labelfree.data.registry)."""

import logging
import sys

from labelfree.data.registry import prepare_dataset

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = open(sm.log[0], "w", buffering=1)  # noqa: SIM115 (lives for the whole job)
sys.stderr = log_file
logging.basicConfig(
    stream=log_file, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True
)

prepare_dataset(
    sm.params.name, sm.params.cfg, sm.params.seed, sm.params.out_dir, meta_path=sm.output.meta
)
