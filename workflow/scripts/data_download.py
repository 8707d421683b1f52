"""Thin adapter: fetch and verify a dataset's files (labelfree.data.registry.download_dataset)."""

from labelfree.data.registry import download_dataset
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

download_dataset(sm.params.name, sm.params.cfg, manifest=sm.output[0])
