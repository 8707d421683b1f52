"""Thin adapter: the example figure of one dataset's shifted test sets (labelfree.shifts)."""

import logging

from labelfree.joblog import log_to
from labelfree.shifts.figures import example_grid
from labelfree.store import read_image_set, save_figure

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

p = sm.params
clean = read_image_set(sm.input.id).x
paths = iter(sm.input.corrupted)
corrupted = {c: {s: read_image_set(next(paths)).x for s in p.severities} for c in p.corruptions}
natural = {n: read_image_set(f).x for n, f in zip(p.natural, sm.input.natural, strict=True)}
fig = example_grid(clean, corrupted, natural, p.severities, index=p.index)
save_figure(fig, sm.output.png, sm.output.pdf)
logging.info("%s: %d corruptions, %d natural shifts", sm.output.png, len(corrupted), len(natural))
