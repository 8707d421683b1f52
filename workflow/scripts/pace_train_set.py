"""Thin adapter: the zoo's training split as test set `pace_train` (PACE Table 12: CSS-COV's LSA
needs the models' LHL activations on their training inputs, which inference then writes).

params.subsample > 0 keeps that many inputs, drawn without replacement (seeded), in their
original order; 0 keeps the whole split.
"""

import logging

import numpy as np

from labelfree.seeds import rng
from labelfree.store import read_image_set, write_image_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
logging.basicConfig(filename=sm.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(message)s")
base = read_image_set(sm.input.split)
keep = np.arange(len(base.x))
if 0 < sm.params.subsample < len(keep):
    keep = np.sort(rng(sm.params.seed, "pace", "train_subsample").choice(
        len(keep), sm.params.subsample, replace=False))
write_image_set(sm.output.train, base.x[keep], base.y[keep])
logging.info("training split %s as test set: %d of %d images", sm.input.split, len(keep), len(base.x))
