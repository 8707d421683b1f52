"""Thin adapter: a dataset's training split as test set `alphatrim-train` (backbone features)."""

import logging

from labelfree.store import read_image_set, write_image_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
logging.basicConfig(filename=sm.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(message)s")
s = read_image_set(sm.input[0])
write_image_set(sm.output[0], s.x, s.y, **dict(s.extras))
logging.info("copied %d images of %s to %s", len(s), sm.input[0], sm.output[0])
