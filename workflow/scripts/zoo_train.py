"""Thin adapter: train every local model of one zoo (labelfree.zoo.local.train_local_zoo)."""

import torch

from labelfree.joblog import log_to
from labelfree.zoo.local import train_local_zoo

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = log_to(sm.log[0])
torch.set_num_threads(sm.threads)

train_local_zoo(
    zoo=sm.params.zoo,
    rows=sm.params.rows,
    train_path=sm.input.train,
    out_dirs=sm.params.dirs,
    val_fraction=sm.params.val_fraction,
    base_seed=sm.params.seed,
    device=sm.params.device,
    progress_file=log_file,
)
