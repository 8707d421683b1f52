"""Thin adapter: run the models of one zoo bundle on its test-set groups, one group after the
other in this one process (labelfree.inference.infer_group per group); one output file per model
and group.

Bundle rules run it as a `script:`; the per-model rule `inference_model` runs it from `shell:`
as `python inference_run.py JOB LOG THREADS` (JOB: the job as JSON), because
Snakemake re-reads a `script:` source for every job while it builds the graph
(workflow/rules/inference.smk). Either way a job is functions/inference.smk::inference_job, one
per group: bundle rules pass a list of them, the per-model rule one. A bundle job that infers
its whole zoo then writes the zoo's accuracy table (param `accuracy`: rule accuracy_table's
work, labelfree.accuracy.write_accuracy_table, logged to that rule's log).
"""

import sys

import torch

from labelfree.inference import infer_group, retain_freed_memory
from labelfree.joblog import adapter_job, log_to

# script: (bundle rules) injects `snakemake`; shell: (per-model rule) passes JOB LOG THREADS
sm = globals().get("snakemake")
job, log_path, threads = adapter_job(sm, sys.argv)
log_file = log_to(log_path)
torch.set_num_threads(threads)
retain_freed_memory()  # glibc: reuse freed activations, no page faults per batch

# each: model_dirs, testsets, out_paths, features, feature_dtype, batch_size, device, amp,
# cache_bytes
for group_job in job if isinstance(job, list) else [job]:
    infer_group(
        **{**group_job, "testsets": [tuple(pair) for pair in group_job["testsets"]]},
        progress_file=log_file,
    )

accuracy = sm.params.get("accuracy") if sm is not None else None
if accuracy:
    # deferred: pandas and matplotlib (about 1 s to import) only where the job writes the table
    from labelfree.accuracy import write_accuracy_table

    log_to(sm.log.accuracy)
    o = sm.output
    write_accuracy_table(**accuracy, csv=o.csv, md=o.md, png=o.png, pdf=o.pdf)
