"""Thin adapter: PACE's input pools and training split as test sets, one step after another,
each logged to its own file (labelfree.pace.run.write_pools, write_train_set; docs/pace.md,
reading R16): the mutated pools (patch, light), the generated pools (FGSM, BIM and, when
enabled, C&W L2 against the attack model) and, for Table 12, the training split `pace_train`."""

import torch

from labelfree.joblog import log_to
from labelfree.pace.run import write_pools, write_train_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
out, p = dict(sm.output.items()), sm.params  # key -> path

log_to(sm.log.mutated)
torch.set_num_threads(1)  # as its own job ran
write_pools("mutated", sm.input.pool, {k: out[k] for k in ("patch", "light")}, p.seed,
            mutation=p.mutation)

log_to(sm.log.generated)
torch.set_num_threads(sm.threads)
write_pools("generated", sm.input.pool,
            {k: out[k] for k in ("cw", "fgsm", "bim") if k in out}, p.seed,
            model_dir=p.model_dir, preprocessing=p.preprocessing, attack=p.attack)

if "train" in out:
    log_to(sm.log.train_set)
    write_train_set(sm.input.split, out["train"], p.subsample, p.seed)
