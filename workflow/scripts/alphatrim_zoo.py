"""Thin adapter: data and seed-regime zoos of one alphatrim experiment (labelfree.alphatrim.run.train_experiment,
or merge_blocks of its seed-block shards)."""

from labelfree.alphatrim.run import collect_spine_zoos, merge_blocks, train_experiment
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])  # log and tracebacks to the log; progress bars also to the terminal
# models_per_job: merge the shards (`in sm.input` would test its values: keys())
if "blocks" in sm.input.keys():  # noqa: SIM118
    merge_blocks(sm.params.name, sm.params.cfg, list(map(str, sm.input.blocks)), sm.output.zoo,
                 sm.output.runs)
elif sm.params.cfg["data"]["source"] == "zoos":  # runs trained by the spine's zoo layer
    inputs = {k: (list(map(str, v)) if k.startswith("logits_") else str(v))
              for k, v in sm.input.items()}
    collect_spine_zoos(sm.params.name, sm.params.cfg, inputs, sm.params.sheets, sm.output.zoo,
                       sm.output.runs)
else:
    inputs = {k: str(v) for k, v in sm.input.items()}
    train_experiment(sm.params.name, sm.params.cfg, sm.params.seed, inputs, sm.output.zoo,
                     sm.output.runs, threads=sm.threads)
