"""Thin adapter: PACE's input pools as test sets (labelfree.pace.subjects, spec 5.4, 5.5, 7).

params.kind: `shifted` (id + four one-pixel shifts), `mutated` (patch, light) or `generated`
(FGSM, BIM and, when enabled, C&W L2 against the attack model).
"""

import logging

import torch

from labelfree.joblog import log_to
from labelfree.pace import subjects as S
from labelfree.seeds import rng
from labelfree.store import read_image_set, write_image_set

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
torch.set_num_threads(sm.threads)
log = logging.getLogger("pace_testsets")

base = read_image_set(sm.input.pool)
kind = sm.params.kind
seed = sm.params.seed
if kind == "shifted":
    x, y = S.shifted_pool(base.x, base.y)
    write_image_set(sm.output.shifted, x, y)
    log.info("shifted pool: %d images", len(x))
elif kind == "mutated":
    m = sm.params.mutation
    xp = S.patch_images(base.x, rng(seed, "pace", "patch"), m["patch_size"], tuple(m["patch_count"]))
    write_image_set(sm.output.patch, xp, base.y)
    xl = S.light_images(base.x, rng(seed, "pace", "light"), tuple(m["light_offset"]),
                        tuple(m["light_contrast"]))
    write_image_set(sm.output.light, xl, base.y)
    log.info("mutated pools: %d images each", len(base.x))
elif kind == "generated":
    from labelfree.zoo.io import load_model

    model, meta = load_model(sm.params.model_dir)
    a = sm.params.attack
    names = sm.output.keys()  # a Namedlist: `in sm.output` would test the paths
    for method in [m for m in ("fgsm", "bim", "cw") if m in names]:
        x, y, adv = S.adversarial_pool(model, base.x, base.y, rng(seed, "pace", "attack", method),
                                       sm.params.preprocessing, method, a["eps"], a["steps"],
                                       cw=a.get("cw"))
        write_image_set(sm.output[method], x, y, adversarial=adv)
        log.info("%s pool: %d images, %d attacked", method, len(x), int(adv.sum()))
else:
    raise ValueError(f"pace_testsets: unknown kind {kind!r}")
