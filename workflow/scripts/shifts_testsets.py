"""Thin adapter: every shifted test set of one dataset in one job, the configured corruptions at
all their severities, then the natural shifts (labelfree.shifts; `shifts.jobs: dataset`). Each set
is what shifts_corruption.py and shifts_natural.py write for it."""

import logging

from labelfree.joblog import log_to
from labelfree.shifts.suite import corruption_sets, keeps_geometry, natural_sets
from labelfree.store import read_image_set, write_image_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

p = sm.params
clean = read_image_set(sm.input.id)
paths = iter(sm.output)
for corruption in p.corruptions:
    sets = corruption_sets(
        clean.x,
        clean.y,
        corruption,
        p.severities,
        seed=p.seed,
        dataset=p.dataset,
        params=p.table,
        released=p.released or None,
        single_level_severity=p.single_level_severity,
        fallback=p.fallback,
    )
    extras = dict(clean.extras) if keeps_geometry(corruption) else {}
    for severity in p.severities:
        path, ts = next(paths), sets[severity]
        keep = extras if ts.source == "generated" else {}
        write_image_set(path, ts.x, ts.y, **keep)
        logging.info("%s: %d images (%s), extras %s", path, len(ts.y), ts.source, sorted(keep))
natural = natural_sets(clean.x, clean.y, p.natural, seed=p.seed, dataset=p.dataset)
for name in p.natural:
    path, extras = next(paths), dict(clean.extras) if keeps_geometry(name) else {}
    write_image_set(path, natural[name].x, natural[name].y, **extras)
    logging.info("%s: %d images, extras %s", path, len(natural[name].y), sorted(extras))
