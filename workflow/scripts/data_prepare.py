"""Thin adapter: build one dataset and write all its splits (labelfree.data.registry), then,
where the rule asks for it, its in-distribution test set `id`, a validated copy of the test
split (the same file rule testset_id writes; one job, one process)."""

import logging
from pathlib import Path

from labelfree.data.registry import prepare_dataset
from labelfree.joblog import log_to
from labelfree.store import read_image_set, write_image_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

prepare_dataset(
    sm.params.name, sm.params.cfg, sm.params.seed, sm.params.out_dir, meta_path=sm.output.meta
)
(test_split,) = [p for p in sm.output.splits if Path(p).stem == sm.params.test_split]
for path in sm.output.id:
    s = read_image_set(test_split)
    write_image_set(path, s.x, s.y, **dict(s.extras))
    logging.info("%s -> %s: %d images, extras %s", test_split, path, len(s), sorted(s.extras))
