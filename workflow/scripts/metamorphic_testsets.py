"""Thin adapter: DigitScenes sources, follow-ups and counterfactuals of one dataset directory
(labelfree.metamorphic.run.write_testsets)."""

from labelfree.joblog import log_to
from labelfree.metamorphic.run import write_testsets

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

written = write_testsets(
    sm.params.dataset, sm.params.bases, sm.params.metamorphic, sm.params.seed, sm.params.out_dir,
    split_paths=sm.params.split_paths, meta_paths=sm.params.meta_paths,
)
missing = sorted(set(map(str, sm.output)) - set(map(str, written)))
if missing:
    raise RuntimeError(f"metamorphic test sets not written: {missing}")
