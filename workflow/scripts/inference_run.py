"""Thin adapter: run every model of one zoo on every test set (labelfree.inference.infer_zoo)."""

import torch

from labelfree.inference import infer_zoo
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = log_to(sm.log[0])
torch.set_num_threads(sm.threads)

infer_zoo(
    model_dirs=sm.params.model_dirs,
    testset_paths=list(sm.input.testsets),
    out_paths=sm.params.grid,
    features=sm.params.features,
    batch_size=sm.params.batch_size,
    device=sm.params.device,
    amp=sm.params.amp,
    progress_file=log_file,
    cache_bytes=sm.params.cache_mb * 2**20,
)
