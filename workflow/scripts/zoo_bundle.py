"""Thin adapter: build one bundle of a zoo (labelfree.zoo.local.build_bundle): train its local
rows, resolve its torchvision/hub/checkpoint rows.

Bundle rules run it as a `script:`; the per-model rule `zoo_model` runs it from `shell:` as
`python zoo_bundle.py JOB LOG THREADS` (JOB: the job as JSON), because
Snakemake re-reads a `script:` source for every job while it builds the graph
(workflow/rules/zoo.smk). Either way the job is functions/zoo.smk::zoo_job.
"""

import json
import sys

import torch

from labelfree.joblog import log_to
from labelfree.zoo.local import build_bundle

if "snakemake" in globals():  # script: (bundle rules)
    sm = snakemake  # noqa: F821 (injected by Snakemake)
    job, log_path, threads = sm.params.job, sm.log[0], sm.threads
else:  # shell: (zoo_model)
    job, log_path, threads = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
log_file = log_to(log_path)
torch.set_num_threads(threads)

# zoo, rows, out_dirs, train_path, idset_path, val_fraction, base_seed, device
build_bundle(**job, progress_file=log_file)
