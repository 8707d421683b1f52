"""Thin adapter: run every model of one zoo on every test set (labelfree.inference.infer_zoo)."""

import logging
import sys

import torch

from labelfree.inference import infer_zoo

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = open(sm.log[0], "w", buffering=1)  # noqa: SIM115 (lives for the whole job)
sys.stderr = log_file
logging.basicConfig(
    stream=log_file, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True
)
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
