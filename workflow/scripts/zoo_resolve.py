"""Thin adapter: resolve a zoo's torchvision/hub/checkpoint rows (labelfree.zoo.pretrained)."""

import logging

from labelfree.joblog import log_to
from labelfree.store import read_image_set
from labelfree.zoo.pretrained import resolve_row

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

ids = read_image_set(sm.input.idset)
in_shape = tuple(int(s) for s in ids.x.shape[1:])
num_classes = int(ids.y.shape[1]) if ids.y.ndim == 2 else int(ids.y.max()) + 1
for row, out in zip(sm.params.rows, sm.params.dirs, strict=True):
    meta = resolve_row(sm.params.zoo, row, out, ".", in_shape, num_classes)
    logging.info("%s: %s %s -> %s (%d params)", row["model"], row["source"], row["weights"], out, meta["params"])
