"""Thin adapter: one seed-block shard of an alphatrim experiment (labelfree.alphatrim.run.train_block)."""

from labelfree.alphatrim.run import train_block
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])  # log and tracebacks to the log; progress bars also to the terminal
train_block(sm.params.name, sm.params.cfg, sm.params.seed, {k: str(v) for k, v in sm.input.items()},
            sm.params.zoo, sm.params.start, sm.params.stop, sm.output[0], threads=sm.threads)
