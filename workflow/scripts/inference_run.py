"""Thin adapter: run the models of one zoo bundle on one test-set group
(labelfree.inference.infer_group); one output file per model."""

import torch

from labelfree.inference import infer_group, retain_freed_memory
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = log_to(sm.log[0])
torch.set_num_threads(sm.threads)
retain_freed_memory()  # glibc: reuse freed activations, no page faults per batch

job = sm.params.job  # model_dirs, testsets, features, feature_dtype (functions/inference.smk)
infer_group(
    model_dirs=job["model_dirs"],
    testsets=[tuple(pair) for pair in job["testsets"]],
    out_paths=list(sm.output),
    features=job["features"],
    batch_size=sm.params.batch_size,
    device=sm.params.device,
    amp=sm.params.amp,
    progress_file=log_file,
    cache_bytes=sm.params.cache_mb * 2**20,
    feature_dtype=job["feature_dtype"],
)
