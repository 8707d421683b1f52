"""Thin adapter: the natural-shift test sets of one dataset (labelfree.shifts.natural)."""

import logging

from labelfree.joblog import log_to
from labelfree.shifts.suite import keeps_geometry, natural_sets
from labelfree.store import read_image_set, write_image_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

p = sm.params
clean = read_image_set(sm.input.id)
sets = natural_sets(clean.x, clean.y, p.names, seed=p.seed, dataset=p.dataset)
for name, path in zip(p.names, sm.output, strict=True):
    extras = dict(clean.extras) if keeps_geometry(name) else {}
    write_image_set(path, sets[name].x, sets[name].y, **extras)
    logging.info("%s: %d images, extras %s", path, len(sets[name].y), sorted(extras))
