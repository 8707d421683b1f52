"""Thin adapter: DigitScenes sources, follow-ups and counterfactuals of one dataset directory
(labelfree.metamorphic.experiment.write_testsets)."""

import logging
import sys

from labelfree.metamorphic.experiment import write_testsets

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = open(sm.log[0], "w", buffering=1)  # noqa: SIM115 (lives for the whole job)
sys.stderr = log_file
logging.basicConfig(
    stream=log_file, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True
)

written = write_testsets(
    sm.params.dataset, sm.params.bases, sm.params.mm, sm.params.seed, sm.params.out_dir,
    split_paths=sm.params.split_paths,
)
missing = sorted(set(map(str, sm.output)) - set(map(str, written)))
if missing:
    raise RuntimeError(f"metamorphic test sets not written: {missing}")
