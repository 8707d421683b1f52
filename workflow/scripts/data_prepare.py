"""Thin adapter: build one dataset and write all its splits (labelfree.data.registry)."""

from labelfree.data.registry import prepare_dataset
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

prepare_dataset(
    sm.params.name, sm.params.cfg, sm.params.seed, sm.params.out_dir, meta_path=sm.output.meta
)
