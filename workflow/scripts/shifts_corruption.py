"""Thin adapter: one corruption of one dataset, all configured severities (labelfree.shifts)."""

import logging

from labelfree.joblog import log_to
from labelfree.shifts.suite import corruption_sets, keeps_geometry
from labelfree.store import read_image_set, write_image_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

p = sm.params
clean = read_image_set(sm.input.id)
sets = corruption_sets(
    clean.x,
    clean.y,
    p.corruption,
    p.severities,
    seed=p.seed,
    dataset=p.dataset,
    params=p.table,
    released=p.released or None,
    single_level_severity=p.single_level_severity,
    fallback=p.fallback,
)
extras = dict(clean.extras) if keeps_geometry(p.corruption) else {}
for severity, path in zip(p.severities, sm.output, strict=True):
    ts = sets[severity]
    keep = extras if ts.source == "generated" else {}
    write_image_set(path, ts.x, ts.y, **keep)
    logging.info("%s: %d images (%s), extras %s", path, len(ts.y), ts.source, sorted(keep))
