"""Thin adapter: fetch and verify a dataset's files (labelfree.data.registry.download_dataset)."""

import logging
import sys

from labelfree.data.registry import download_dataset

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = open(sm.log[0], "w", buffering=1)  # noqa: SIM115 (lives for the whole job)
sys.stderr = log_file
logging.basicConfig(
    stream=log_file, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True
)

download_dataset(sm.params.name, sm.params.cfg, manifest=sm.output[0])
