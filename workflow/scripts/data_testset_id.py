"""Thin adapter: the in-distribution test set `id` is a validated copy of the test split."""

import logging

from labelfree.store import read_image_set, write_image_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
logging.basicConfig(
    filename=sm.log[0], level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s"
)

s = read_image_set(sm.input[0])
write_image_set(sm.output[0], s.x, s.y, **dict(s.extras))
logging.info("%s -> %s: %d images, extras %s", sm.input[0], sm.output[0], len(s), sorted(s.extras))
