"""Thin adapter: build one bundle of a zoo (labelfree.zoo.local.build_bundle): train its local
rows, resolve its torchvision/hub/checkpoint rows."""

import torch

from labelfree.joblog import log_to
from labelfree.zoo.local import build_bundle

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = log_to(sm.log[0])
torch.set_num_threads(sm.threads)

build_bundle(
    **sm.params.job,  # zoo, rows, out_dirs, val_fraction, device (functions/zoo.smk::zoo_job)
    train_path=sm.input.get("train"),
    idset_path=sm.input.get("idset"),
    base_seed=sm.params.seed,
    progress_file=log_file,
)
