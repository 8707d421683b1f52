"""Thin adapter: PACE's input pools as test sets (labelfree.pace.run.write_pools; docs/pace.md,
reading R16).

params.kind: `shifted` (id + four one-pixel shifts), `mutated` (patch, light) or `generated`
(FGSM, BIM and, when enabled, C&W L2 against the attack model).
"""

import torch

from labelfree.joblog import log_to
from labelfree.pace.run import write_pools

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
torch.set_num_threads(sm.threads)

p = sm.params
write_pools(p.kind, sm.input.pool, dict(sm.output.items()), p.seed, mutation=p.get("mutation"),
            model_dir=p.get("model_dir"), preprocessing=p.get("preprocessing", "scale01"),
            attack=p.get("attack"))
