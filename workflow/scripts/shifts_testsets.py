"""Thin adapter: every shifted test set of one dataset in one job, the configured corruptions at
all their severities, then the natural shifts (labelfree.shifts; `shifts.jobs: dataset`). Each set
is what shifts_corruption.py and shifts_natural.py write for it. Where the rule lists the
dataset's example figure (rule shifts_testsets; the datasets a zoo tests on), the job draws it
from the written sets too, as shifts_examples.py does, logging to the examples log."""

import logging

from labelfree.joblog import log_to
from labelfree.shifts.suite import keeps_geometry, natural_sets, write_corruption
from labelfree.store import read_image_set, write_image_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

p = sm.params
clean = read_image_set(sm.input.id)
n = len(p.severities)
outputs = list(sm.output.sets)
for i, corruption in enumerate(p.corruptions):
    write_corruption(
        clean,
        corruption,
        p.severities,
        outputs[i * n : (i + 1) * n],
        seed=p.seed,
        dataset=p.dataset,
        params=p.table,
        released=p.released or None,
        single_level_severity=p.single_level_severity,
        fallback=p.fallback,
    )
paths = iter(outputs[len(p.corruptions) * n :])
natural = natural_sets(clean.x, clean.y, p.natural, seed=p.seed, dataset=p.dataset)
for name in p.natural:
    path, extras = next(paths), dict(clean.extras) if keeps_geometry(name) else {}
    write_image_set(path, natural[name].x, natural[name].y, **extras)
    logging.info("%s: %d images, extras %s", path, len(natural[name].y), sorted(extras))
if sm.output.get("png"):
    # deferred: matplotlib (about 1.6 s to import) only where the job draws the figure
    from labelfree.shifts.figures import write_example_figure

    log_to(sm.log.examples)
    write_example_figure(
        sm.input.id, outputs[: len(p.corruptions) * n], outputs[len(p.corruptions) * n :],
        p.corruptions, p.severities, p.natural, sm.output.png, sm.output.pdf, index=p.index,
    )
