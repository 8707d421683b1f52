"""Thin adapter: gather every PACE subject (features, item scores, confidences) into one npz
(labelfree.pace.subjects; spec 2.2, 2.10, 7)."""

import logging

import pandas as pd
from threadpoolctl import threadpool_limits

from labelfree.joblog import log_to
from labelfree.pace import subjects as S
from labelfree.pace.experiment import save_subjects
from labelfree.seeds import rng
from labelfree.store import read_features, read_image_set, read_logits, save_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
log = logging.getLogger("pace_subjects")

with threadpool_limits(sm.threads):
    subjects = []
    for spec, infer, tset in zip(sm.params.subjects, sm.input.infer, sm.input.testsets, strict=True):
        ts = read_image_set(tset)
        t = spec["testset"]  # one member of the inference file of the set's group
        subjects.append(S.classification_subject(
            spec["name"], spec["model"], t, spec["input_type"], spec["mutant"],
            ts.x, ts.y, read_logits(infer, t), read_features(infer, "first", t),
            read_features(infer, "penultimate", t), spec["preprocessing"],
        ))
        log.info("%s: N=%d accuracy %.4f", spec["name"], subjects[-1].n, subjects[-1].truth)
    reg = sm.params.regression
    if reg["enabled"]:
        train = read_image_set(sm.input.train)
        pool = read_image_set(sm.input.pool)
        m = sm.params.mutation
        subs, info = S.regression_subjects(
            train.x, pool.x, rng(sm.params.seed, "pace", "regression"), reg["max_angle_deg"],
            reg["train_copies"], tuple(reg["hidden"]), sm.params.seed,
            patch={"size": m["patch_size"], "count": tuple(m["patch_count"])},
            light={"offset": tuple(m["light_offset"]), "contrast": tuple(m["light_contrast"])},
        )
        log.info("regression subjects: %s", info)
        subjects += subs
    save_subjects(sm.output.npz, subjects)
    save_table(pd.DataFrame([s.meta() for s in subjects]).drop(columns="features"),
               sm.output.csv, title="PACE subjects (Table 1 analogue): task, input type, accuracy, pool size",
               float_format="%.4f")
