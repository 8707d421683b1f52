"""Thin adapter: one seed-block shard of an alphatrim experiment (pipeline.train_block)."""

import logging

from labelfree.alphatrim.pipeline import train_block

sm = snakemake  # noqa: F821 (injected by Snakemake)
logging.basicConfig(filename=sm.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(message)s")
train_block(sm.params.name, sm.params.cfg, sm.params.seed, {k: str(v) for k, v in sm.input.items()},
            sm.params.zoo, sm.params.start, sm.params.stop, sm.output[0], threads=sm.threads)
