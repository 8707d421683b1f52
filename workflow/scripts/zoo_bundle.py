"""Thin adapter: build one bundle of a zoo (labelfree.zoo.local.build_bundle): train its local
rows, resolve its torchvision/hub/checkpoint rows.

Bundle rules run it as a `script:`; the per-model rule `zoo_model` runs it from `shell:` as
`python zoo_bundle.py JOB LOG THREADS` (JOB: the job as JSON), because
Snakemake re-reads a `script:` source for every job while it builds the graph
(workflow/rules/zoo.smk). Either way the job is functions/zoo.smk::zoo_job.
"""

import sys

import torch

from labelfree.joblog import adapter_job, log_to
from labelfree.zoo.local import build_bundle

# script: (bundle rules) injects `snakemake`; shell: (per-model rule) passes JOB LOG THREADS
job, log_path, threads = adapter_job(globals().get("snakemake"), sys.argv)
log_file = log_to(log_path)
torch.set_num_threads(threads)

# zoo, rows, out_dirs, train_path, idset_path, val_fraction, base_seed, device
build_bundle(**job, progress_file=log_file)
